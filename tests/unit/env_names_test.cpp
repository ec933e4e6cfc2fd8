#include "mgpr/env_names.hpp"

#include <gtest/gtest.h>

namespace {

TEST(SlurmHostList, FirstHost) {
  EXPECT_EQ(mgpr::first_host("node1"), "node1");
  EXPECT_EQ(mgpr::first_host("gpu[03-05,9],cpu1"), "gpu03");
  EXPECT_EQ(mgpr::first_host("gpu[7]"), "gpu7");
  EXPECT_EQ(mgpr::first_host("a,b"), "a");
  EXPECT_EQ(mgpr::first_host(""), "");
}

}  // namespace
