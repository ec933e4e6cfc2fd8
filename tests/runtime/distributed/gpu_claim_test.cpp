// Two ranks on one GPU, refused before the model loads: real ranks claim their GPU's
// UUID on the run's store (fake UUIDs, so no GPU is needed), and the second rank on a
// GPU stops at once, naming both ranks; rank 0 passes the reason on at rendezvous.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "runtime/distributed/rank_env.hpp"
#include "support/process.hpp"
#include "support/text_search.hpp"

namespace mgpr::test {
namespace {

std::vector<std::string> rank_args(const fs::path& out, const std::string& uuid) {
  return {MGPR_COMM_RANK_EXE, "out=" + out.string(), "timeout=20", "gather=1", "gpu_uuid=" + uuid};
}

TEST(GpuClaim, TwoRanksOnOneGpuAreRefusedNamingBoth) {
  const TempDir dir;
  const int port = free_port();
  // Rank 0 claims first and prepares for 3 s, as a model load would take.
  std::vector<std::string> first = rank_args(dir.path(), "GPU-0000aaaa-fake");
  first.emplace_back("prepare_s=3");
  Process rank0(first, rank_env(0, 2, port), dir.path(), "rank0");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Process rank1(rank_args(dir.path(), "GPU-0000aaaa-fake"), rank_env(1, 2, port), dir.path(), "rank1");
  const auto second = rank1.wait(std::chrono::seconds(60));
  const auto waited = rank0.wait(std::chrono::seconds(60));
  for (const auto* result : {&second, &waited}) {
    EXPECT_NE(result->code, 0);
    EXPECT_TRUE(contains(result->err, "ranks 0 and 1 all run on the same GPU, GPU-0000aaaa-fake on host "))
        << result->err;
    EXPECT_TRUE(contains(result->err, "--gpus-per-task=1")) << result->err;
  }
  EXPECT_LT(second.seconds, 3.0) << "the second rank must stop before its own preparation";
  EXPECT_LT(waited.seconds, 3 + 5.0) << "rank 0 must not wait out the rendezvous timeout";
  EXPECT_FALSE(contains(read_text(dir.path() / "rank-1.txt"), "joined"));
}

// Rank 1 comes first: it still claims after rank 0, so rank 1 is the one refused, and
// rank 0, which holds the store, tells it why at once instead of leaving it to find the
// store gone after its preparation.
TEST(GpuClaim, RankZeroIsNeverTheRankRefusedEvenWhenItComesLast) {
  const TempDir dir;
  const int port = free_port();
  std::vector<std::string> early = rank_args(dir.path(), "GPU-0000cccc-fake");
  early.emplace_back("prepare_s=3");
  Process rank1(early, rank_env(1, 2, port), dir.path(), "rank1");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  std::vector<std::string> late = rank_args(dir.path(), "GPU-0000cccc-fake");
  late.emplace_back("prepare_s=3");
  Process rank0(late, rank_env(0, 2, port), dir.path(), "rank0");
  const auto refused = rank1.wait(std::chrono::seconds(60));
  const auto told = rank0.wait(std::chrono::seconds(60));
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(told.code, 0);
  for (const auto* result : {&refused, &told}) {
    EXPECT_TRUE(contains(result->err, "ranks 0 and 1 all run on the same GPU, GPU-0000cccc-fake on host "))
        << result->err;
  }
  EXPECT_LT(refused.seconds, 1.0 + 3.0) << "rank 1 must stop before its own preparation";
  EXPECT_LT(told.seconds, 3 + 5.0) << "rank 0 must not wait out the rendezvous timeout";
  EXPECT_FALSE(contains(read_text(dir.path() / "rank-0.txt"), "joined"));
}

TEST(GpuClaim, RanksOnGpusOfTheirOwnJoin) {
  const TempDir dir;
  const int port = free_port();
  Process rank0(rank_args(dir.path(), "GPU-0000aaaa-fake"), rank_env(0, 2, port), dir.path(), "rank0");
  Process rank1(rank_args(dir.path(), "GPU-0000bbbb-fake"), rank_env(1, 2, port), dir.path(), "rank1");
  const auto first = rank0.wait(std::chrono::seconds(60));
  const auto second = rank1.wait(std::chrono::seconds(60));
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_TRUE(contains(read_text(dir.path() / "rank-1.txt"), "gathered 0 ")) << read_text(dir.path() / "rank-1.txt");
}

}  // namespace
}  // namespace mgpr::test
