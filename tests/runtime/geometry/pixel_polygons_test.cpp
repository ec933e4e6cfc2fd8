// Polygons of pixels: every region of a random labelled core traced, and random
// 4-connected regions given as one unit square per pixel united, must each be one
// polygon covering exactly the region's pixels (even-odd over all its rings), holes
// included, with rings that never pass a corner twice (valid even where two pixels of
// the shape meet only at a corner).
#include "geometry/pixel_polygons.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace {

using mgpr::runtime::PixelPoint;
using mgpr::runtime::PixelPolygon;

PixelPolygon unit_square(int x, int y) { return {{{{x, y}, {x + 1, y}, {x + 1, y + 1}, {x, y + 1}, {x, y}}}}; }

// Even-odd over every ring: whether the point (x + 0.5, y + 0.5) is inside.
bool covers(const PixelPolygon& polygon, int x, int y) {
  const double px = x + 0.5;
  const double py = y + 0.5;
  bool inside = false;
  for (const auto& ring : polygon.rings) {
    for (std::size_t i = 0; i + 1 < ring.size(); ++i) {
      const auto& a = ring[i];
      const auto& b = ring[i + 1];
      if ((a.y > py) != (b.y > py) && px < a.x + (py - a.y) * (b.x - a.x) / static_cast<double>(b.y - a.y)) {
        inside = !inside;
      }
    }
  }
  return inside;
}

void expect_simple_rings(const PixelPolygon& polygon) {
  for (const auto& ring : polygon.rings) {
    ASSERT_GE(ring.size(), 5U);
    EXPECT_EQ(ring.front(), ring.back());
    std::set<std::pair<int, int>> seen;
    for (std::size_t i = 0; i + 1 < ring.size(); ++i) {
      EXPECT_TRUE(seen.insert({ring[i].x, ring[i].y}).second)
          << "a ring passes (" << ring[i].x << ", " << ring[i].y << ") twice";
    }
  }
}

TEST(PixelUnion, RandomRegionsFromUnitSquaresAreExactlyTheirPixels) {
  std::mt19937 random(11);
  constexpr int kSide = 40;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::uint8_t> classes(kSide * kSide);
    std::bernoulli_distribution filled(0.45 + (trial % 5) * 0.05);
    for (auto& c : classes) c = filled(random) ? 1 : 0;
    std::array<bool, 256> left_out{};
    left_out[0] = true;
    const auto regions = mgpr::runtime::class_regions(classes, {}, {0, 0, kSide, kSide}, {}, left_out);
    // The largest region: the most holes and corners.
    std::size_t largest = 0;
    for (std::size_t r = 0; r < regions.regions.size(); ++r) {
      if (regions.regions[r].pixels > regions.regions[largest].pixels) largest = r;
    }
    const auto label = static_cast<std::int32_t>(largest + 1);
    std::vector<PixelPolygon> pieces;
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        if (regions.labels[static_cast<std::size_t>(y * kSide + x)] == label) pieces.push_back(unit_square(x, y));
      }
    }
    const auto united = mgpr::runtime::unite_pixel_polygons(pieces);
    ASSERT_TRUE(united.has_value()) << "trial " << trial;
    EXPECT_DOUBLE_EQ(mgpr::runtime::pixel_area(*united), static_cast<double>(pieces.size())) << "trial " << trial;
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        ASSERT_EQ(covers(*united, x, y), regions.labels[static_cast<std::size_t>(y * kSide + x)] == label)
            << "pixel " << x << "," << y << " trial " << trial;
      }
    }
    expect_simple_rings(*united);
    EXPECT_GT(mgpr::runtime::twice_area(united->rings.front()), 0) << "the outer ring first";
  }
}

TEST(RegionPolygons, EveryRegionOfARandomCoreIsExactlyItsPixels) {
  std::mt19937 random(5);
  constexpr int kWidth = 37;
  constexpr int kHeight = 23;
  const mgpr::runtime::PixelWindow core{100, 200, kWidth, kHeight};  // raster pixels, not the core's
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::uint8_t> classes(kWidth * kHeight);
    std::uniform_int_distribution<int> value(0, 2 + trial % 3);
    for (auto& c : classes) c = static_cast<std::uint8_t>(value(random));
    std::array<bool, 256> left_out{};
    left_out[0] = true;
    const auto regions = mgpr::runtime::class_regions(classes, {}, core, {}, left_out);
    const auto polygons = mgpr::runtime::region_polygons(regions.labels, core, regions.regions.size());
    ASSERT_EQ(polygons.size(), regions.regions.size());
    for (std::size_t r = 0; r < polygons.size(); ++r) {
      ASSERT_FALSE(polygons[r].rings.empty()) << "region " << r << " trial " << trial;
      EXPECT_DOUBLE_EQ(mgpr::runtime::pixel_area(polygons[r]), static_cast<double>(regions.regions[r].pixels));
      expect_simple_rings(polygons[r]);
      for (int y = 0; y < kHeight; ++y) {
        for (int x = 0; x < kWidth; ++x) {
          const bool in_region = regions.labels[static_cast<std::size_t>(y * kWidth + x)] == static_cast<int>(r + 1);
          ASSERT_EQ(covers(polygons[r], core.x + x, core.y + y), in_region)
              << "pixel " << x << "," << y << " region " << r << " trial " << trial;
        }
      }
    }
  }
}

TEST(PixelUnion, AHoleClosedAtACornerIsAHoleAndPiecesApartAreRefused) {
  // A frame of pixels round a 2x2 block, its corner (3, 3) missing, so that (3, 2) and
  // (2, 3) meet only at the point (3, 3): the block is a hole touching the outer ring
  // there. Without (0, 0) the frame is two pieces meeting only at corners.
  //   . X X X        X X X X
  //   X . . X        X . . X
  //   X . . X        X . . X
  //   X X X .        X X X .
  std::vector<PixelPolygon> pieces;
  for (const auto& [x, y] : std::vector<std::pair<int, int>>{
           {1, 0}, {2, 0}, {3, 0}, {0, 1}, {3, 1}, {0, 2}, {0, 3}, {1, 3}, {2, 3}, {3, 2}}) {
    pieces.push_back(unit_square(x, y));
  }
  // (0,1)-(0,2)-(0,3)-(1,3)-(2,3) and (1,0)-(2,0)-(3,0)-(3,1)-(3,2) join only through
  // the corners (0,1)/(1,0) and (2,3)/(3,2): two pieces apart.
  EXPECT_FALSE(mgpr::runtime::unite_pixel_polygons(pieces).has_value());
  pieces.push_back(unit_square(0, 0));  // now one shape; (3,2) and (2,3) still meet at a corner
  const auto united = mgpr::runtime::unite_pixel_polygons(pieces);
  ASSERT_TRUE(united.has_value());
  EXPECT_DOUBLE_EQ(mgpr::runtime::pixel_area(*united), 11);
  expect_simple_rings(*united);
  EXPECT_EQ(united->rings.size(), 2U) << "the 2x2 block is one hole, apart from the outer ring";
}

}  // namespace
