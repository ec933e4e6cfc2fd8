// The feeds in one process, under concurrent reader threads: each tile handed out once.
#include "distributed/sharding.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "geometry/tiler.hpp"

namespace mgpr::runtime {
namespace {

std::vector<TileId> drain(const TileFeed& feed, int threads) {
  std::mutex mutex;
  std::vector<TileId> out;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (const auto tile = feed()) {
        const std::lock_guard lock(mutex);
        out.push_back(tile->id);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<TileId> ids(const std::vector<Tile>& tiles) {
  std::vector<TileId> out;
  for (const auto& tile : tiles) out.push_back(tile.id);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TileFeed, StaticFeedGivesThisRanksShardOnceUnderThreads) {
  const auto tiles = tile_image(0, 5000, 3000, 256, 32);
  for (int world = 1; world <= 3; ++world) {
    std::vector<TileId> all;
    for (int rank = 0; rank < world; ++rank) {
      const auto mine = drain(make_static_feed(tiles, rank, world), 4);
      EXPECT_EQ(mine, ids(static_shard(tiles, rank, world)));
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, ids(tiles)) << world << " ranks";
  }
}

TEST(TileFeed, DynamicFeedsSharingACounterSplitEveryTileOnce) {
  const auto tiles = tile_image(1, 4000, 4000, 512, 0);
  const auto communicator = make_local_communicator();
  // Two feeds on one counter stand for two ranks; each drained by several threads at once.
  const auto a = make_dynamic_feed(tiles, *communicator, "run-a");
  const auto b = make_dynamic_feed(tiles, *communicator, "run-a");
  std::vector<TileId> first;
  std::vector<TileId> second;
  std::thread other([&] { second = drain(b, 3); });
  first = drain(a, 3);
  other.join();
  first.insert(first.end(), second.begin(), second.end());
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, ids(tiles));
  // Another run key is another counter.
  EXPECT_EQ(drain(make_dynamic_feed(tiles, *communicator, "run-b"), 2), ids(tiles));
}

// Rank 0 marks the counter when it hands a lost rank's tile again: a claim after the mark
// tells the rank once, and the mark changes none of the tiles claimed (every tile once).
TEST(TileFeed, AHandedMarkOnTheCounterIsSeenOnceAtTheNextClaimAndLeasesStayWhole) {
  const auto tiles = tile_image(1, 4000, 4000, 512, 0);
  const auto communicator = make_local_communicator();
  int told = 0;
  const auto feed = make_dynamic_feed(tiles, *communicator, "run", nullptr, [&told] { ++told; });
  std::vector<TileId> claimed{feed()->id};
  EXPECT_EQ(told, 0);
  communicator->add("run", kHandedMark);
  while (const auto tile = feed()) {
    claimed.push_back(tile->id);
    if (claimed.size() == 20) communicator->add("run", kHandedMark);
  }
  EXPECT_EQ(told, 2) << "once after each mark";
  std::sort(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed, ids(tiles));
}

// Leases are a share of what is unclaimed: long early (at most kLongestLease), a tile at
// the end, so the ranks finish together.
TEST(TileFeed, LeasesAreGuidedFromLongToOneTile) {
  EXPECT_EQ(lease_size(8'000'000, 256), kLongestLease);
  EXPECT_EQ(lease_size(1000, 4), 62);
  EXPECT_EQ(lease_size(10'000, 4), 64);
  EXPECT_EQ(lease_size(100, 4), 6);
  EXPECT_EQ(lease_size(7, 4), 1);
  EXPECT_EQ(lease_size(0, 4), 1);
  EXPECT_EQ(lease_size(100, 0), 25);  // a world of no ranks counts as one
}

// A long run: a store request per lease of 64 tiles, not per tile; every tile once, and
// one rank's tiles in order (its leases are contiguous).
TEST(TileFeed, ALongRunClaimsALeaseOf64TilesARequest) {
  class CountingCommunicator final : public ForwardingCommunicator {
   public:
    CountingCommunicator() : ForwardingCommunicator(make_local_communicator()) {}
    std::int64_t add(const std::string& key, std::int64_t delta) override {
      ++adds;
      return ForwardingCommunicator::add(key, delta);
    }
    std::atomic<int> adds{0};
  };
  const auto tiles = tile_image(0, 100 * 64, 100 * 64, 64, 0);  // 10,000 tiles
  CountingCommunicator communicator;
  EXPECT_EQ(drain(make_dynamic_feed(tiles, communicator, "run"), 1), ids(tiles));
  EXPECT_LT(communicator.adds.load(), 10'000 / 50) << "requests for 10,000 tiles";
  EXPECT_GT(communicator.adds.load(), 10'000 / 64);
}

TEST(LocalCommunicator, CountsGathersAndNeedsNoNetwork) {
  const auto communicator = make_local_communicator();
  EXPECT_EQ(communicator->rank(), 0);
  EXPECT_EQ(communicator->world_size(), 1);
  EXPECT_EQ(communicator->add("k", 5), 5);
  EXPECT_EQ(communicator->add("k", -2), 3);
  EXPECT_EQ(communicator->add("other", 0), 0);
  communicator->barrier();
  const std::string bytes("a\0b", 3);
  EXPECT_EQ(communicator->all_gather(bytes), std::vector<std::string>{bytes});
}

TEST(LocalCommunicator, JoinRunOfOneRankIsLocal) {
  RankEnvironment ranks;  // world_size 1, no MASTER_ADDR: nothing to connect to
  const auto communicator = join_run(ranks, {});
  EXPECT_EQ(communicator->world_size(), 1);
  EXPECT_EQ(communicator->add("x", 1), 1);
}

}  // namespace
}  // namespace mgpr::runtime
