// What GPU ranks must agree on before NCCL is set up, tested without GPUs: their NCCL
// versions, one GPU each (by UUID), and the network interface NCCL's sockets take.
#include "distributed/nccl_checks.hpp"

#include <gtest/gtest.h>

#include "distributed/gloo_address.hpp"
#include "support/text_search.hpp"

namespace mgpr::runtime {
namespace {

using test::contains;

TEST(NcclChecks, VersionCodesReadAsReleases) {
  EXPECT_EQ(format_nccl_version(22809), "2.28.9");
  EXPECT_EQ(format_nccl_version(21805), "2.18.5");
  EXPECT_EQ(format_nccl_version(2804), "2.8.4");  // before 2.9: one digit fewer
}

TEST(NcclChecks, EqualVersionsPass) {
  EXPECT_FALSE(nccl_version_mismatch({22809, 22809, 22809}));
  EXPECT_FALSE(nccl_version_mismatch({22809}));
}

TEST(NcclChecks, AVersionMismatchNamesTheRanksAndVersions) {
  const auto message = nccl_version_mismatch({22809, 22809, 21805, 22809});
  ASSERT_TRUE(message);
  EXPECT_TRUE(contains(*message, "(rank 2 NCCL 2.18.5, ranks 0-1, 3 NCCL 2.28.9)")) << *message;
  EXPECT_TRUE(contains(*message, "the same container image or environment module on every node")) << *message;
}

TEST(NcclChecks, RanksOnGpusOfTheirOwnPass) {
  EXPECT_FALSE(shared_gpu_message({{0, "gpu01", "GPU-aaaa"}, {1, "gpu01", "GPU-bbbb"}, {2, "gpu02", "GPU-cccc"}}));
  EXPECT_FALSE(shared_gpu_message({}));
}

TEST(NcclChecks, TwoRanksOnOneGpuAreNamedWithTheHostTheGpuAndTheFix) {
  const auto message =
      shared_gpu_message({{0, "gpu01", "GPU-aaaa"}, {3, "gpu02", "GPU-dddd"}, {1, "gpu01", "GPU-dddd"}});
  ASSERT_TRUE(message);
  EXPECT_TRUE(contains(*message, "ranks 1 and 3 all run on the same GPU, GPU-dddd on host gpu02")) << *message;
  EXPECT_TRUE(contains(*message, "--ntasks-per-node equal to the GPUs per node with --gpus-per-task=1")) << *message;
  EXPECT_TRUE(contains(*message, "CUDA_VISIBLE_DEVICES")) << *message;
}

TEST(NcclChecks, OfSeveralSharedGpusTheLowestRanksIsReported) {
  const auto message = shared_gpu_message(
      {{4, "b", "GPU-2"}, {5, "b", "GPU-2"}, {0, "a", "GPU-1"}, {1, "a", "GPU-1"}, {2, "a", "GPU-1"}});
  ASSERT_TRUE(message);
  EXPECT_TRUE(contains(*message, "ranks 0-2 all run on the same GPU, GPU-1 on host a")) << *message;
}

const std::vector<NetworkInterface> kInterfaces{{"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}, {"ib0", "192.168.7.5"}};

TEST(NcclInterface, TheUsersOwnChoiceIsLeftAlone) {
  EXPECT_FALSE(nccl_socket_ifname("ib0", "eth0", "10.0.0.5", kInterfaces));
}

TEST(NcclInterface, GloosInterfaceIsTakenAsGlooTakesIt) {
  EXPECT_EQ(nccl_socket_ifname(nullptr, "ib0,eth0", "10.0.0.5", kInterfaces), "=ib0");
  EXPECT_EQ(nccl_socket_ifname("", "eth0", std::nullopt, kInterfaces), "=eth0");
}

TEST(NcclInterface, TheInterfaceThatRoutesToRankZeroIsChosen) {
  EXPECT_EQ(nccl_socket_ifname(nullptr, nullptr, "192.168.7.5", kInterfaces), "=ib0");
  EXPECT_EQ(nccl_socket_ifname(nullptr, "", "127.0.0.1", kInterfaces), "=lo");  // a run on one host
}

TEST(NcclInterface, NoRouteOrNoMatchLeavesNcclsOwnChoice) {
  EXPECT_FALSE(nccl_socket_ifname(nullptr, nullptr, std::nullopt, kInterfaces));
  EXPECT_FALSE(nccl_socket_ifname(nullptr, nullptr, "172.16.0.9", kInterfaces));
}

TEST(NcclInterface, ThisHostsInterfacesIncludeLoopback) {
  bool loopback = false;
  for (const auto& interface : network_interfaces()) loopback = loopback || interface.address == "127.0.0.1";
  EXPECT_TRUE(loopback);
}

}  // namespace
}  // namespace mgpr::runtime
