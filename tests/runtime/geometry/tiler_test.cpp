#include "geometry/tiler.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using mgpr::runtime::static_shard;
using mgpr::runtime::tile_image;
using mgpr::runtime::window_starts;

TEST(Tiler, StartsStepFromTheCornerAndEndFlush) {
  EXPECT_EQ(window_starts(1000, 256, 0), (std::vector<int>{0, 256, 512, 744}));
  EXPECT_EQ(window_starts(1024, 256, 0), (std::vector<int>{0, 256, 512, 768}));
  EXPECT_EQ(window_starts(1000, 256, 32), (std::vector<int>{0, 224, 448, 672, 744}));
}

TEST(Tiler, SmallImageIsOneWindow) {
  EXPECT_EQ(window_starts(100, 256, 0), (std::vector<int>{0}));
  EXPECT_EQ(window_starts(256, 256, 0), (std::vector<int>{0}));
  const auto tiles = tile_image(0, 100, 50, 256, 0);
  ASSERT_EQ(tiles.size(), 1U);
  EXPECT_EQ(tiles[0].window, (mgpr::runtime::PixelWindow{0, 0, 100, 50}));
}

TEST(Tiler, NeighboursOverlapAtLeastTheMinimumAndCoverTheImage) {
  for (const int length : {257, 999, 1000, 4096, 5000}) {
    for (const int overlap : {0, 16, 100}) {
      const auto starts = window_starts(length, 256, overlap);
      EXPECT_EQ(starts.front(), 0);
      EXPECT_EQ(starts.back() + 256, length);
      for (std::size_t i = 1; i < starts.size(); ++i) {
        EXPECT_GE(starts[i - 1] + 256 - starts[i], overlap) << length << " " << overlap;
        EXPECT_GT(starts[i], starts[i - 1]);
      }
    }
  }
}

TEST(Tiler, IdsAreRowMajorGridPositions) {
  const auto tiles = tile_image(3, 600, 300, 256, 0);  // 3 columns x 2 rows
  ASSERT_EQ(tiles.size(), 6U);
  EXPECT_EQ(tiles[4].id, (mgpr::runtime::TileId{3, 1, 1}));
  EXPECT_EQ(tiles[4].window, (mgpr::runtime::PixelWindow{256, 44, 256, 256}));
}

TEST(Tiler, StaticShardsCoverEveryTileExactlyOnce) {
  const auto tiles = tile_image(0, 2000, 1500, 256, 32);
  for (const int world : {1, 2, 3, 7}) {
    std::multiset<mgpr::runtime::TileId> seen;
    for (int rank = 0; rank < world; ++rank) {
      for (const auto& tile : static_shard(tiles, rank, world)) seen.insert(tile.id);
    }
    EXPECT_EQ(seen.size(), tiles.size());
    for (const auto& tile : tiles) EXPECT_EQ(seen.count(tile.id), 1U);
  }
}

TEST(Tiler, RejectsOverlapNotBelowTileSize) { EXPECT_THROW(window_starts(1000, 256, 256), std::invalid_argument); }

}  // namespace
