// What GPU ranks must agree on before NCCL is set up, tested without GPUs: their NCCL
// versions, one GPU each (by UUID), and the network interface NCCL's sockets take; and
// how the NCCL communicator sizes its staging buffers and lays out a gather.
#include "distributed/nccl_checks.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "distributed/gloo_address.hpp"
#include "support/error_of.hpp"
#include "support/text_search.hpp"

namespace mgpr::runtime {
namespace {

using test::contains;
using test::error_of;

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

// The staging buffers of the NCCL communicator: freeing one waits for the whole device,
// so they must grow rarely, and never to less than asked for.
TEST(NcclStaging, ABufferLargeEnoughIsKept) {
  EXPECT_EQ(staging_capacity(8192, 8192), 8192U);
  EXPECT_EQ(staging_capacity(8192, 1), 8192U);
  EXPECT_EQ(staging_capacity(8192, 0), 8192U);
}

TEST(NcclStaging, TheFirstBufferIsAWholePage) {
  EXPECT_EQ(staging_capacity(0, 1), 4096U);
  EXPECT_EQ(staging_capacity(0, 4097), 8192U);
}

TEST(NcclStaging, GrowingAtLeastDoublesSoGrowingGathersReallocateRarely) {
  EXPECT_EQ(staging_capacity(4096, 4097), 8192U);
  EXPECT_EQ(staging_capacity(1 << 20, (1 << 20) + 1), 2U << 20);
  // A need past double is met at once, in whole pages.
  EXPECT_EQ(staging_capacity(4096, 100000), 102400U);
  // Bytes asked for one more each time: 4096 to 1 MiB in a handful of reallocations, not thousands.
  std::size_t held = 0;
  int reallocations = 0;
  for (std::size_t needed = 1; needed <= (1U << 20); needed += 97) {
    const auto grown = staging_capacity(held, needed);
    ASSERT_GE(grown, needed);
    if (grown != held) ++reallocations;
    held = grown;
  }
  EXPECT_LE(reallocations, 9);
}

TEST(NcclStaging, SizesNearTheTopNeitherWrapNorShrink) {
  constexpr auto kMost = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(staging_capacity(kMost / 2 + 10, kMost / 2 + 11), kMost / 2 + 11);
  EXPECT_EQ(staging_capacity(4096, kMost - 1), kMost - 1);
  EXPECT_GE(staging_capacity(kMost / 4, kMost / 4 + 1), kMost / 4 + 1);
}

TEST(NcclGather, UnequalLengthsArePaddedToTheLongest) {
  const auto layout = gather_layout({3, 0, 7});
  EXPECT_EQ(layout.padded, 7U);
  EXPECT_EQ(layout.total, 21U);
  // Nothing to gather anywhere: NCCL still wants a count of one.
  const auto empty = gather_layout({0, 0});
  EXPECT_EQ(empty.padded, 1U);
  EXPECT_EQ(empty.total, 2U);
}

TEST(NcclGather, ANegativeOrOverflowingLengthIsRefusedNamingTheRank) {
  EXPECT_TRUE(contains(error_of<std::runtime_error>([] {
                         gather_layout({4, -1});
                       }),
                       "rank 1 reported a length of -1 bytes to gather"));
  const auto huge = std::numeric_limits<std::int64_t>::max();
  EXPECT_TRUE(contains(error_of<std::runtime_error>([&] { gather_layout({huge, 0, 0}); }), "more than memory holds"));
}

TEST(NcclGather, EachRanksBytesComeBackWithoutThePadding) {
  const std::vector<std::int64_t> lengths{2, 0, 4};
  const auto layout = gather_layout(lengths);
  const std::string gathered("ab\0\0\0\0\0\0wx\0z", 12);
  EXPECT_EQ(split_gathered(gathered, layout, lengths), (std::vector<std::string>{"ab", "", std::string("wx\0z", 4)}));
  EXPECT_TRUE(contains(error_of<std::runtime_error>([&] { split_gathered(gathered.substr(0, 11), layout, lengths); }),
                       "11 gathered bytes cannot hold 3 ranks of 4 bytes"));
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
