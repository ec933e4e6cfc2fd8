#include "geometry/box_merge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace {

using mgpr::runtime::Box;
using mgpr::runtime::merge_boxes;
using mgpr::runtime::MergeOptions;
using mgpr::runtime::PixelWindow;
using mgpr::runtime::place_in_image;
using mgpr::runtime::TileId;

Box make_box(double x1, double y1, double x2, double y2, double score, std::int64_t label = 0, bool truncated = false,
             TileId tile = {}) {
  return Box{tile, x1, y1, x2, y2, score, label, truncated};
}

TEST(BoxMerge, AreaIntersectionAndIou) {
  const Box a = make_box(0, 0, 10, 10, 1);
  const Box b = make_box(5, 0, 15, 10, 1);
  EXPECT_DOUBLE_EQ(mgpr::runtime::area(a), 100);
  EXPECT_DOUBLE_EQ(mgpr::runtime::intersection_area(a, b), 50);
  EXPECT_DOUBLE_EQ(mgpr::runtime::iou(a, b), 50.0 / 150.0);
  EXPECT_DOUBLE_EQ(mgpr::runtime::iou(a, make_box(10, 0, 20, 10, 1)), 0);  // touching is not overlapping
  EXPECT_DOUBLE_EQ(mgpr::runtime::iou(a, a), 1);
}

TEST(BoxMerge, SameObjectFromTwoTilesBecomesOneBox) {
  const std::vector<Box> boxes{make_box(100, 100, 140, 130, 0.8, 1, false, TileId{0, 0, 0}),
                               make_box(100, 100, 140, 130, 0.9, 1, false, TileId{0, 0, 1})};
  const auto merged = merge_boxes(boxes, MergeOptions{});
  ASSERT_EQ(merged.size(), 1U);
  EXPECT_EQ(merged[0], boxes[1]);  // the higher score
}

TEST(BoxMerge, TruncatedFragmentInsideAWholeBoxIsDropped) {
  // The whole object (0.6) scores lower than the fragment (0.9) and their IoU is low
  // (0.3), yet the fragment goes: whole boxes rank first and it lies inside one.
  const Box whole = make_box(200, 50, 300, 100, 0.6, 2, false, TileId{0, 0, 1});
  const Box fragment = make_box(270, 50, 300, 100, 0.9, 2, true, TileId{0, 0, 2});
  const auto merged = merge_boxes(std::vector<Box>{fragment, whole}, MergeOptions{});
  ASSERT_EQ(merged.size(), 1U);
  EXPECT_EQ(merged[0], whole);
}

TEST(BoxMerge, WholeBoxIsNotDroppedForLyingInsideAnother) {
  // Containment only removes truncated boxes: a small whole object inside a large one stays.
  const Box large = make_box(0, 0, 100, 100, 0.9);
  const Box small = make_box(10, 10, 30, 30, 0.8);
  EXPECT_EQ(merge_boxes(std::vector<Box>{large, small}, MergeOptions{}).size(), 2U);
  const Box cut = make_box(10, 10, 30, 30, 0.8, 0, true, TileId{0, 0, 1});
  EXPECT_EQ(merge_boxes(std::vector<Box>{large, cut}, MergeOptions{}).size(), 1U);
}

// An object cut by an interior tile edge, next to a larger object the model
// also reported in the same tile (IoU 0.26 < 0.5), was dropped by the containment rule
// although no tile holds it whole. Boxes of one tile never contain each other away.
TEST(BoxMerge, ACutObjectBesideALargerOneOfTheSameTileIsKept) {
  const TileId left{0, 0, 0};
  const Box larger = make_box(500, 100, 1000, 400, 0.9, 1, false, left);
  const Box cut = make_box(800, 150, 1024, 350, 0.8, 1, true, left);
  EXPECT_LT(mgpr::runtime::iou(larger, cut), 0.5);
  EXPECT_EQ(merge_boxes(std::vector<Box>{larger, cut}, MergeOptions{}).size(), 2U);
  // The same fragment next to a whole box from the neighbouring tile is a duplicate.
  const Box whole_next_door = make_box(800, 150, 1100, 350, 0.7, 1, false, TileId{0, 0, 1});
  const auto merged = merge_boxes(std::vector<Box>{larger, cut, whole_next_door}, MergeOptions{});
  EXPECT_EQ(merged.size(), 2U);
  EXPECT_EQ(std::count(merged.begin(), merged.end(), cut), 0) << "the fragment goes for the whole object";
}

TEST(BoxMerge, AdjacentDistinctObjectsAreBothKept) {
  const std::vector<Box> boxes{make_box(0, 0, 20, 20, 0.9), make_box(20, 0, 40, 20, 0.8),
                               make_box(18, 18, 38, 38, 0.7)};  // overlaps both, a little
  EXPECT_EQ(merge_boxes(boxes, MergeOptions{}).size(), 3U);
}

TEST(BoxMerge, ClassAwareKeepsOverlappingBoxesOfOtherLabels) {
  const std::vector<Box> boxes{make_box(0, 0, 20, 20, 0.9, 1), make_box(0, 0, 20, 20, 0.8, 2),
                               make_box(1, 0, 21, 20, 0.7, 1)};
  const auto aware = merge_boxes(boxes, MergeOptions{0.5, 0.5, true});
  ASSERT_EQ(aware.size(), 2U);
  EXPECT_EQ(aware[0].label, 1);
  EXPECT_EQ(aware[1].label, 2);
  const auto agnostic = merge_boxes(boxes, MergeOptions{0.5, 0.5, false});
  ASSERT_EQ(agnostic.size(), 1U);
  EXPECT_EQ(agnostic[0], boxes[0]);
}

TEST(BoxMerge, OutputIsSortedByPosition) {
  const std::vector<Box> boxes{make_box(50, 10, 60, 20, 0.1), make_box(0, 30, 10, 40, 0.9),
                               make_box(0, 10, 10, 20, 0.5), make_box(0, 10, 10, 25, 0.4)};
  const auto merged = merge_boxes(boxes, MergeOptions{0.9, 0.9, true});
  ASSERT_EQ(merged.size(), 4U);
  EXPECT_EQ(merged[0], boxes[2]);
  EXPECT_EQ(merged[1], boxes[3]);
  EXPECT_EQ(merged[2], boxes[0]);
  EXPECT_EQ(merged[3], boxes[1]);
}

// Overlapping detections of a few objects from a grid of tiles, with exact ties in
// score and position between boxes that differ only in tile, label or truncation.
std::vector<Box> crowded_boxes(std::mt19937& random, int count) {
  std::uniform_int_distribution<int> position(0, 400);
  std::uniform_int_distribution<int> size(4, 60);
  std::uniform_int_distribution<int> score(0, 4);
  std::uniform_int_distribution<int> small(0, 2);
  std::vector<Box> boxes;
  for (int i = 0; i < count; ++i) {
    const double x = position(random);
    const double y = position(random);
    const double width = size(random);
    const double height = size(random);
    const double confidence = 0.2 * score(random);
    const std::int64_t label = small(random);
    const bool truncated = small(random) == 0;
    const TileId tile{0, small(random), small(random)};
    boxes.push_back(make_box(x, y, x + width, y + height, confidence, label, truncated, tile));
    if (i % 3 == 0) {
      Box twin = boxes.back();
      twin.tile.column += 1;
      boxes.push_back(twin);
    }
  }
  return boxes;
}

TEST(BoxMerge, AnyInputOrderGivesTheSameOutput) {
  std::mt19937 random(20240611);
  for (const bool class_aware : {true, false}) {
    auto boxes = crowded_boxes(random, 300);
    const MergeOptions options{0.4, 0.6, class_aware};
    const auto reference = merge_boxes(boxes, options);
    ASSERT_GT(reference.size(), 10U);
    ASSERT_LT(reference.size(), boxes.size());
    for (int round = 0; round < 50; ++round) {
      std::shuffle(boxes.begin(), boxes.end(), random);
      ASSERT_EQ(merge_boxes(boxes, options), reference) << "round " << round;
    }
  }
}

// The rule written out plainly: every box against every kept box.
std::vector<Box> merge_by_brute_force(std::vector<Box> boxes, const MergeOptions& options) {
  std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) {
    return std::tie(a.truncated, b.score, a.x1, a.y1, a.x2, a.y2, a.label, a.tile) <
           std::tie(b.truncated, a.score, b.x1, b.y1, b.x2, b.y2, b.label, b.tile);
  });
  std::vector<Box> kept;
  for (const Box& box : boxes) {
    bool dropped = false;
    for (const Box& other : kept) {
      if (options.class_aware && other.label != box.label) continue;
      const double inside = mgpr::runtime::intersection_area(box, other) / mgpr::runtime::area(box);
      dropped = dropped || mgpr::runtime::iou(box, other) >= options.iou_threshold ||
                (box.truncated && box.tile != other.tile && inside >= options.containment_threshold);
    }
    if (!dropped) kept.push_back(box);
  }
  std::sort(kept.begin(), kept.end(), [](const Box& a, const Box& b) {
    return std::tie(a.y1, a.x1, a.y2, a.x2, a.label, a.score, a.truncated, a.tile) <
           std::tie(b.y1, b.x1, b.y2, b.x2, b.label, b.score, b.truncated, b.tile);
  });
  return kept;
}

TEST(BoxMerge, MatchesCheckingEveryPair) {
  std::mt19937 random(7);
  for (const int count : {1, 2, 10, 200, 2000}) {
    const auto boxes = crowded_boxes(random, count);
    for (const MergeOptions& options :
         {MergeOptions{0.5, 0.5, true}, MergeOptions{0.3, 0.9, false}, MergeOptions{0.05, 0.05, true}}) {
      EXPECT_EQ(merge_boxes(boxes, options), merge_by_brute_force(boxes, options)) << count;
    }
  }
}

TEST(BoxMerge, ZeroThresholdKeepsOneBoxPerLabel) {
  // IoU >= 0 holds for any pair, touching or not.
  const std::vector<Box> boxes{make_box(0, 0, 10, 10, 0.5, 1), make_box(500, 500, 510, 510, 0.9, 1),
                               make_box(900, 0, 910, 10, 0.1, 2)};
  const auto merged = merge_boxes(boxes, MergeOptions{0.0, 0.5, true});
  ASSERT_EQ(merged.size(), 2U);
  EXPECT_EQ(merged[0], boxes[2]);
  EXPECT_EQ(merged[1], boxes[1]);
  EXPECT_TRUE(merge_boxes(std::vector<Box>{}, MergeOptions{}).empty());
}

// --- place_in_image ---------------------------------------------------------------

TEST(BoxMerge, PlacesTileBoxesInImagePixels) {
  // A 256 px window in the middle of a 1000 x 1000 image; the box is well inside it.
  Box box = make_box(10, 20, 50, 60, 0.9);
  ASSERT_TRUE(place_in_image(box, PixelWindow{256, 512, 256, 256}, 1000, 1000));
  EXPECT_EQ(box, make_box(266, 532, 306, 572, 0.9));
  EXPECT_FALSE(box.truncated);
}

TEST(BoxMerge, BoxAtAnInteriorWindowEdgeIsTruncated) {
  const PixelWindow window{256, 512, 256, 256};
  Box left = make_box(0.5, 20, 50, 60, 0.9);  // within the 1 px tolerance of x = 256
  ASSERT_TRUE(place_in_image(left, window, 1000, 1000));
  EXPECT_TRUE(left.truncated);
  Box right = make_box(200, 20, 260, 60, 0.9);  // past the window: clipped to x = 512
  ASSERT_TRUE(place_in_image(right, window, 1000, 1000));
  EXPECT_DOUBLE_EQ(right.x2, 512);
  EXPECT_TRUE(right.truncated);
  Box bottom = make_box(10, 200, 50, 255.5, 0.9);
  ASSERT_TRUE(place_in_image(bottom, window, 1000, 1000));
  EXPECT_TRUE(bottom.truncated);
  Box near = make_box(2, 2, 50, 50, 0.9);  // 2 px away: outside the tolerance
  ASSERT_TRUE(place_in_image(near, window, 1000, 1000));
  EXPECT_FALSE(near.truncated);
  Box wide = make_box(2, 2, 50, 50, 0.9);
  ASSERT_TRUE(place_in_image(wide, window, 1000, 1000, 3.0));
  EXPECT_TRUE(wide.truncated);
}

TEST(BoxMerge, BoxAtAnImageEdgeIsWhole) {
  // The top-left tile: its left and top edges are the image's.
  Box corner = make_box(0, 0, 40, 40, 0.9);
  ASSERT_TRUE(place_in_image(corner, PixelWindow{0, 0, 256, 256}, 1000, 1000));
  EXPECT_FALSE(corner.truncated);
  // The bottom-right tile (flush with the image): its right and bottom edges are too.
  Box far = make_box(200, 200, 256, 300, 0.9);
  ASSERT_TRUE(place_in_image(far, PixelWindow{744, 744, 256, 256}, 1000, 1000));
  EXPECT_EQ(far, make_box(944, 944, 1000, 1000, 0.9));
  EXPECT_FALSE(far.truncated);
  // Its left edge is inside the image, though.
  Box left = make_box(0, 100, 40, 140, 0.9);
  ASSERT_TRUE(place_in_image(left, PixelWindow{744, 744, 256, 256}, 1000, 1000));
  EXPECT_TRUE(left.truncated);
}

TEST(BoxMerge, PaddingOfASmallImageIsCutAwayAndIsNoCut) {
  // A 100 x 50 image in one 256 px tile: the model sees padding beyond (100, 50).
  const PixelWindow window{0, 0, 100, 50};
  Box spills = make_box(80, 30, 140, 90, 0.9);
  ASSERT_TRUE(place_in_image(spills, window, 100, 50));
  EXPECT_EQ(spills, make_box(80, 30, 100, 50, 0.9));
  EXPECT_FALSE(spills.truncated);
  Box in_padding = make_box(120, 10, 200, 40, 0.9);
  EXPECT_FALSE(place_in_image(in_padding, window, 100, 50));
  Box below = make_box(10, 50, 20, 60, 0.9);  // starts on the last row's far edge
  EXPECT_FALSE(place_in_image(below, window, 100, 50));
}

TEST(BoxMerge, TruncatedFlagFollowsTheBoxNotTheCaller) {
  Box box = make_box(10, 20, 50, 60, 0.9, 0, true);
  ASSERT_TRUE(place_in_image(box, PixelWindow{256, 512, 256, 256}, 1000, 1000));
  EXPECT_FALSE(box.truncated);
}

TEST(BoxMerge, PlacedFragmentsMergeIntoTheWholeObject) {
  // An object at image x 230..280 straddles the seam between two 256 px tiles with a
  // 64 px overlap (windows at x = 0 and x = 192): cut in the first, whole in the second.
  std::vector<Box> boxes{make_box(230, 100, 256, 140, 0.95, 0, false, TileId{0, 0, 0}),
                         make_box(38, 100, 88, 140, 0.7, 0, false, TileId{0, 0, 1})};
  ASSERT_TRUE(place_in_image(boxes[0], PixelWindow{0, 0, 256, 256}, 448, 256));
  ASSERT_TRUE(place_in_image(boxes[1], PixelWindow{192, 0, 256, 256}, 448, 256));
  EXPECT_TRUE(boxes[0].truncated);
  EXPECT_FALSE(boxes[1].truncated);
  const auto merged = merge_boxes(boxes, MergeOptions{});
  ASSERT_EQ(merged.size(), 1U);
  EXPECT_EQ(merged[0], make_box(230, 100, 280, 140, 0.7, 0, false, TileId{0, 0, 1}));
}

}  // namespace
