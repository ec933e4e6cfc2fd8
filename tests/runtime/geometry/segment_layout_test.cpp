#include "geometry/segment_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

namespace {

using mgpr::runtime::AxisRange;
using mgpr::runtime::owned_ranges;
using mgpr::runtime::tile_core;
using mgpr::runtime::tile_image;
using mgpr::runtime::window_starts;

// The rule as written, pixel by pixel: among the windows holding `pixel`, the one where
// it lies farthest from an edge; the earlier one on a tie.
std::size_t owner_by_rule(const std::vector<int>& starts, int window, int pixel) {
  std::size_t best = starts.size();
  int best_distance = -1;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const int start = starts[i];
    if (pixel < start || pixel >= start + window) continue;
    const int distance = std::min(pixel - start, start + window - 1 - pixel);
    if (distance > best_distance) {
      best = i;
      best_distance = distance;
    }
  }
  return best;
}

std::vector<int> overlaps_to_try(int tile_size) {
  std::set<int> overlaps{
      0, 1, 2, tile_size / 4, tile_size / 3, tile_size / 2, 3 * tile_size / 4, tile_size - 2, tile_size - 1};
  std::vector<int> valid;
  std::copy_if(overlaps.begin(), overlaps.end(), std::back_inserter(valid),
               [&](int overlap) { return overlap >= 0 && overlap < tile_size; });
  return valid;
}

TEST(SegmentLayout, ExampleAxisSplitsAtTheOverlapsMiddle) {
  // Windows [0,256) and [224,480) overlap on [224,256); the split is 240.
  const auto starts = window_starts(480, 256, 32);
  ASSERT_EQ(starts, (std::vector<int>{0, 224}));
  EXPECT_EQ(owned_ranges(starts, 256, 480), (std::vector<AxisRange>{{0, 240}, {240, 480}}));
  // Odd overlap [224,257): pixel 240 is 16 from both edges, a tie, so the first window's.
  EXPECT_EQ(owned_ranges(std::vector<int>{0, 224}, 257, 481), (std::vector<AxisRange>{{0, 241}, {241, 481}}));
}

TEST(SegmentLayout, ShortAxisIsOneRange) {
  EXPECT_EQ(owned_ranges(window_starts(100, 256, 32), 256, 100), (std::vector<AxisRange>{{0, 100}}));
  EXPECT_EQ(owned_ranges(window_starts(256, 256, 32), 256, 256), (std::vector<AxisRange>{{0, 256}}));
}

TEST(SegmentLayout, EveryPixelGoesToTheWindowWhereItIsFarthestFromAnEdge) {
  int combinations = 0;
  for (int tile_size = 1; tile_size <= 70; tile_size += 3) {
    for (const int overlap : overlaps_to_try(tile_size)) {
      for (int length = 1; length <= 300; ++length) {
        const auto starts = window_starts(length, tile_size, overlap);
        const int window = std::min(tile_size, length);
        const auto ranges = owned_ranges(starts, tile_size, length);
        ASSERT_EQ(ranges.size(), starts.size());
        ASSERT_EQ(ranges.front().begin, 0);
        ASSERT_EQ(ranges.back().end, length);
        for (std::size_t i = 0; i < ranges.size(); ++i) {
          // Built only when an assertion fails: streaming into gtest is lazy.
          const auto where = [&] {
            return ::testing::Message() << "length " << length << " tile " << tile_size << " overlap " << overlap
                                        << " window " << i;
          };
          ASSERT_LT(ranges[i].begin, ranges[i].end) << where();  // every window owns something
          if (i > 0) {
            ASSERT_EQ(ranges[i].begin, ranges[i - 1].end) << where();
          }
          ASSERT_GE(ranges[i].begin, starts[i]) << where();
          ASSERT_LE(ranges[i].end, starts[i] + window) << where();
          for (int pixel = ranges[i].begin; pixel < ranges[i].end; ++pixel) {
            ASSERT_EQ(owner_by_rule(starts, window, pixel), i) << where() << " pixel " << pixel;
          }
        }
        ++combinations;
      }
    }
  }
  EXPECT_GT(combinations, 50000);
}

TEST(SegmentLayout, DeepOverlapsPutAPixelInManyWindows) {
  // Step 2 with 10 px windows: pixel 10 lies in five, [2,12) to [10,20); [6,16) holds
  // it 4 px from its nearer edge, farther than any other does.
  const auto starts = window_starts(30, 10, 8);
  ASSERT_EQ(starts, (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20}));
  const auto ranges = owned_ranges(starts, 10, 30);
  EXPECT_EQ(ranges[3], (AxisRange{10, 12}));
  EXPECT_EQ(ranges.front(), (AxisRange{0, 6}));
  EXPECT_EQ(ranges.back(), (AxisRange{24, 30}));
}

TEST(SegmentLayout, RejectsStartsThatDoNotCoverTheAxis) {
  EXPECT_THROW(owned_ranges({}, 10, 30), std::invalid_argument);
  EXPECT_THROW(owned_ranges({0, 10}, 10, 30), std::invalid_argument);          // [20,30) in no window
  EXPECT_THROW(owned_ranges({2, 20}, 10, 30), std::invalid_argument);          // [0,2) in no window
  EXPECT_THROW(owned_ranges({0, 20, 10, 20}, 10, 30), std::invalid_argument);  // not ascending
  EXPECT_THROW(owned_ranges({0}, 0, 30), std::invalid_argument);
}

TEST(SegmentLayout, TileCoresCoverTheImageExactlyOnce) {
  for (const auto& [width, height, tile_size, overlap] :
       std::vector<std::tuple<int, int, int, int>>{{1000, 700, 256, 32},
                                                   {300, 90, 64, 63},
                                                   {37, 200, 64, 16},
                                                   {513, 257, 256, 0},
                                                   {50, 40, 64, 8},
                                                   {777, 555, 100, 49}}) {
    const auto tiles = tile_image(0, width, height, tile_size, overlap);
    std::vector<int> covered(static_cast<std::size_t>(width) * static_cast<std::size_t>(height), 0);
    for (const auto& tile : tiles) {
      const auto core = tile_core(tile, width, height, tile_size, overlap);
      // A core is cut from its tile's pixels.
      ASSERT_GE(core.x, tile.window.x);
      ASSERT_GE(core.y, tile.window.y);
      ASSERT_LE(core.x + core.width, tile.window.x + tile.window.width);
      ASSERT_LE(core.y + core.height, tile.window.y + tile.window.height);
      for (int y = core.y; y < core.y + core.height; ++y) {
        for (int x = core.x; x < core.x + core.width; ++x) {
          ++covered[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)];
        }
      }
    }
    EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int count) { return count == 1; }))
        << width << " x " << height << " tile " << tile_size << " overlap " << overlap;
  }
}

TEST(SegmentLayout, TileCoreOfAnExampleGrid) {
  // 480 px wide, 256 px tall, 256 px tiles, 32 px overlap: two columns split at 240.
  const auto tiles = tile_image(0, 480, 256, 256, 32);
  ASSERT_EQ(tiles.size(), 2U);
  EXPECT_EQ(tile_core(tiles[0], 480, 256, 256, 32), (mgpr::runtime::PixelWindow{0, 0, 240, 256}));
  EXPECT_EQ(tile_core(tiles[1], 480, 256, 256, 32), (mgpr::runtime::PixelWindow{240, 0, 240, 256}));
}

TEST(SegmentLayout, TileCoreRejectsATileFromAnotherTiling) {
  const auto tiles = tile_image(0, 1000, 1000, 256, 32);
  EXPECT_THROW((void)tile_core(tiles.back(), 1000, 1000, 256, 0), std::invalid_argument);
  EXPECT_THROW((void)tile_core(tiles.back(), 500, 1000, 256, 32), std::invalid_argument);
}

}  // namespace
