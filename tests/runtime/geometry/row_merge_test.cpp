// The merge a row of tiles at a time gives what the merge of the whole raster gives,
// whatever the boxes: objects cut by tile edges and found again in the next tile, chains
// of overlapping boxes that cross several rows, boxes of several labels, thresholds of
// zero. And it holds only the boxes near the rows still to come.
#include "geometry/row_merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "geometry/tiler.hpp"

namespace {

using mgpr::runtime::Box;
using mgpr::runtime::merge_boxes;
using mgpr::runtime::MergeOptions;
using mgpr::runtime::place_in_image;
using mgpr::runtime::RowMerge;

constexpr int kImage = 1000;
constexpr int kTile = 256;
constexpr int kOverlap = 48;

// Random objects over a 1000² image, each reported by every tile that sees a part of it,
// clipped to that tile's window as the tasks clip them; `chains` lays some objects in
// overlapping runs down the image, across rows.
std::vector<std::vector<Box>> boxes_by_row(std::mt19937& random, int objects, bool chains, double largest = 60) {
  const auto starts = mgpr::runtime::window_starts(kImage, kTile, kOverlap);
  std::uniform_real_distribution<double> place(0, kImage - 10);
  std::uniform_real_distribution<double> size(4, largest);
  std::uniform_real_distribution<double> score(0, 1);
  std::uniform_int_distribution<int> label(0, 2);
  std::vector<Box> objects_in_image;
  for (int i = 0; i < objects; ++i) {
    Box box;
    box.x1 = place(random);
    box.y1 = place(random);
    box.x2 = std::min<double>(kImage, box.x1 + size(random));
    box.y2 = std::min<double>(kImage, box.y1 + size(random));
    box.label = label(random);
    objects_in_image.push_back(box);
    if (chains && i % 10 == 0) {
      for (int link = 1; link < 40 && box.y2 + 20 < kImage; ++link) {
        box.y1 += 20;
        box.y2 += 20;
        objects_in_image.push_back(box);
      }
    }
  }
  std::vector<std::vector<Box>> rows(starts.size());
  for (std::size_t r = 0; r < starts.size(); ++r) {
    for (std::size_t c = 0; c < starts.size(); ++c) {
      const mgpr::runtime::PixelWindow window{starts[c], starts[r], kTile, kTile};
      for (auto object : objects_in_image) {
        // As the tile reports it: in tile pixels, with a score of its own.
        object.x1 -= window.x;
        object.x2 -= window.x;
        object.y1 -= window.y;
        object.y2 -= window.y;
        object.score = score(random);
        object.tile = {0, static_cast<int>(r), static_cast<int>(c)};
        if (place_in_image(object, window, kImage, kImage)) rows[r].push_back(object);
      }
    }
  }
  return rows;
}

std::vector<Box> row_by_row(const std::vector<std::vector<Box>>& rows, const MergeOptions& options,
                            std::size_t* most_held = nullptr) {
  const auto starts = mgpr::runtime::window_starts(kImage, kTile, kOverlap);
  RowMerge merge(options);
  std::vector<Box> out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto top = r + 1 < rows.size() ? std::optional<double>(starts[r + 1]) : std::nullopt;
    auto final_boxes = merge.add_row(rows[r], top);
    out.insert(out.end(), final_boxes.begin(), final_boxes.end());
    if (most_held != nullptr) *most_held = std::max(*most_held, merge.held());
  }
  return out;
}

std::vector<Box> whole(const std::vector<std::vector<Box>>& rows, const MergeOptions& options) {
  std::vector<Box> all;
  for (const auto& row : rows) all.insert(all.end(), row.begin(), row.end());
  return merge_boxes(all, options);
}

// Sets compared in merge_boxes' own output order.
std::vector<Box> sorted(std::vector<Box> boxes) {
  std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) {
    return std::tie(a.y1, a.x1, a.y2, a.x2, a.label, a.score, a.truncated, a.tile) <
           std::tie(b.y1, b.x1, b.y2, b.x2, b.label, b.score, b.truncated, b.tile);
  });
  return boxes;
}

TEST(RowMerge, GivesTheWholeRastersMergeForAnyBoxes) {
  const std::vector<MergeOptions> settings{{0.5, 0.5, true}, {0.3, 0.5, false}, {0.9, 0.2, true}};
  for (unsigned seed = 1; seed <= 12; ++seed) {
    std::mt19937 random(seed);
    const auto rows = boxes_by_row(random, 300, seed % 2 == 0);
    for (const auto& options : settings) {
      const auto expected = whole(rows, options);
      const auto got = sorted(row_by_row(rows, options));
      ASSERT_EQ(got.size(), expected.size()) << "seed " << seed;
      EXPECT_TRUE(got == expected) << "seed " << seed;
    }
  }
}

// Only what can still meet a later tile's box is held: far less than the raster's boxes,
// when objects are apart as tree crowns are (no chain of overlaps across the raster).
TEST(RowMerge, HoldsOnlyTheBoxesNearTheRowsToCome) {
  std::mt19937 random(7);
  const auto rows = boxes_by_row(random, 1500, false, 16);
  std::size_t all = 0;
  for (const auto& row : rows) all += row.size();
  std::size_t most_held = 0;
  const auto merged = row_by_row(rows, {0.5, 0.5, true}, &most_held);
  EXPECT_EQ(sorted(merged), whole(rows, {0.5, 0.5, true}));
  EXPECT_LT(most_held, all / 2) << "held " << most_held << " of " << all;
  EXPECT_GT(most_held, 0U);
}

// Thresholds of zero let boxes that do not even touch suppress each other: nothing is
// final before the last row, and the result is still the whole raster's.
TEST(RowMerge, ThresholdsOfZeroWaitForTheLastRow) {
  std::mt19937 random(3);
  const auto rows = boxes_by_row(random, 100, false);
  const MergeOptions options{0.0, 0.5, true};
  const auto starts = mgpr::runtime::window_starts(kImage, kTile, kOverlap);
  RowMerge merge(options);
  for (std::size_t r = 0; r + 1 < rows.size(); ++r) EXPECT_TRUE(merge.add_row(rows[r], starts[r + 1]).empty());
  EXPECT_EQ(sorted(merge.add_row(rows.back(), std::nullopt)), whole(rows, options));
}

}  // namespace
