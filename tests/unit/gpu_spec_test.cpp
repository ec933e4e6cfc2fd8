#include "mgpr/gpu_spec.hpp"

#include <gtest/gtest.h>

#include "mgpr/error.hpp"
#include "support/error_of.hpp"

namespace {

std::string error_of(std::string_view text) {
  return mgpr::test::error_of([&] { mgpr::parse_gpu_spec(text); });
}

TEST(GpuSpec, TypedCount) {
  const auto spec = mgpr::parse_gpu_spec("a100:2");
  EXPECT_EQ(spec.type, "a100");
  EXPECT_EQ(spec.count, 2);
  EXPECT_EQ(spec.to_slurm(), "a100:2");
}

TEST(GpuSpec, CountOnly) {
  const auto spec = mgpr::parse_gpu_spec("4");
  EXPECT_EQ(spec.type, "");
  EXPECT_EQ(spec.count, 4);
  EXPECT_EQ(spec.to_slurm(), "4");
}

TEST(GpuSpec, OtherTypes) {
  EXPECT_EQ(mgpr::parse_gpu_spec("h100:4").type, "h100");
  EXPECT_EQ(mgpr::parse_gpu_spec("nvidia_a100-80g:8").count, 8);
}

TEST(GpuSpec, RejectsMalformedWithGrammarInMessage) {
  EXPECT_NE(error_of("").find("it is empty"), std::string::npos);
  EXPECT_NE(error_of("a100:").find("count is missing"), std::string::npos);
  EXPECT_NE(error_of(":2").find("type before ':' is empty"), std::string::npos);
  EXPECT_NE(error_of("a100:two").find("'two' is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("a100:0").find("at least 1"), std::string::npos);
  EXPECT_NE(error_of("-1").find("at least 1"), std::string::npos);
  EXPECT_NE(error_of("a1 00:2").find("contains ' '"), std::string::npos);
  EXPECT_NE(error_of("800").find("more than any node has"), std::string::npos);
  // Every message names the input and shows the grammar.
  const auto message = error_of("a100:x");
  EXPECT_NE(message.find("'a100:x'"), std::string::npos);
  EXPECT_NE(message.find("[TYPE:]COUNT"), std::string::npos);
}

}  // namespace
