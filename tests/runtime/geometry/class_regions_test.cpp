// A core's class regions: 4-connected, the left-out classes making none, pixel counts
// and score sums, the runs along the sides that are seams; the ring arithmetic the
// polygons use; and the text the regions travel and are journaled as.
#include "geometry/class_regions.hpp"

#include <gtest/gtest.h>

#include "geometry/region_text.hpp"

namespace {

using mgpr::runtime::class_regions;
using mgpr::runtime::CoreSeams;
using mgpr::runtime::PixelRing;
using mgpr::runtime::PixelWindow;
using Side = mgpr::runtime::SeamRun::Side;

std::array<bool, 256> leaving_out(std::initializer_list<int> classes) {
  std::array<bool, 256> out{};
  for (const int c : classes) out[static_cast<std::size_t>(c)] = true;
  return out;
}

TEST(ClassRegions, PixelsJoinThroughEdgesNotCorners) {
  // 1 1 0 2
  // 0 1 0 2
  // 1 0 0 2
  const std::vector<std::uint8_t> classes{1, 1, 0, 2, 0, 1, 0, 2, 1, 0, 0, 2};
  const auto regions = class_regions(classes, {}, PixelWindow{10, 20, 4, 3}, CoreSeams{}, leaving_out({0}));
  ASSERT_EQ(regions.regions.size(), 3U);  // the diagonal 1 at the bottom left is apart
  EXPECT_EQ(regions.regions[0].class_value, 1);
  EXPECT_EQ(regions.regions[0].pixels, 3);
  EXPECT_EQ(regions.regions[1].class_value, 2);
  EXPECT_EQ(regions.regions[1].pixels, 3);
  EXPECT_EQ(regions.regions[2].class_value, 1);
  EXPECT_EQ(regions.regions[2].pixels, 1);
  const std::vector<std::int32_t> labels{1, 1, 0, 2, 0, 1, 0, 2, 3, 0, 0, 2};
  EXPECT_EQ(regions.labels, labels);
  for (const auto& region : regions.regions) EXPECT_TRUE(region.seams.empty());  // no side is a seam
}

TEST(ClassRegions, ScoresSumPerRegionAndNoDataMakesNone) {
  const std::vector<std::uint8_t> classes{3, 3, 255, 0};
  const std::vector<float> scores{0.5F, 0.25F, 0.9F, 0.75F};
  const auto regions = class_regions(classes, scores, PixelWindow{0, 0, 2, 2}, CoreSeams{}, leaving_out({255}));
  ASSERT_EQ(regions.regions.size(), 2U);
  EXPECT_DOUBLE_EQ(regions.regions[0].score_sum, 0.75);
  EXPECT_EQ(regions.regions[1].class_value, 0);  // 0 is a class unless left out
  EXPECT_DOUBLE_EQ(regions.regions[1].score_sum, 0.75);
}

TEST(ClassRegions, RunsAlongSeamSidesInRasterPixels) {
  // A 3x3 core at (100, 50); its right and bottom sides border other cores.
  // 1 1 1
  // 0 0 1
  // 2 0 1
  const std::vector<std::uint8_t> classes{1, 1, 1, 0, 0, 1, 2, 0, 1};
  const auto regions =
      class_regions(classes, {}, PixelWindow{100, 50, 3, 3}, CoreSeams{false, true, false, true}, leaving_out({0}));
  ASSERT_EQ(regions.regions.size(), 2U);
  using Run = mgpr::runtime::SeamRun;
  const std::vector<Run> ones{{Side::kBottom, 53, 102, 103}, {Side::kRight, 103, 50, 53}};
  EXPECT_EQ(regions.regions[0].seams, ones);
  const std::vector<Run> twos{{Side::kBottom, 53, 100, 101}};
  EXPECT_EQ(regions.regions[1].seams, twos);
}

TEST(ClassRegions, ARegionAsLargeAsTheCoreNeedsNoDeepStack) {
  const std::vector<std::uint8_t> classes(2048 * 2048, 1);
  const auto regions = class_regions(classes, {}, PixelWindow{0, 0, 2048, 2048}, CoreSeams{}, leaving_out({}));
  ASSERT_EQ(regions.regions.size(), 1U);
  EXPECT_EQ(regions.regions[0].pixels, 2048 * 2048);
}

TEST(PixelRings, AreaAndCollinearPoints) {
  // A 4x3 rectangle with extra points on its top and right edges.
  const PixelRing ring{{0, 0}, {2, 0}, {4, 0}, {4, 1}, {4, 3}, {0, 3}, {0, 0}};
  EXPECT_EQ(std::llabs(mgpr::runtime::twice_area(ring)), 24);
  const PixelRing plain{{0, 0}, {4, 0}, {4, 3}, {0, 3}, {0, 0}};
  EXPECT_EQ(mgpr::runtime::without_collinear_points(ring), plain);
  // The first point itself on a line: dropped too, and the ring stays closed.
  const PixelRing starting_mid{{2, 0}, {4, 0}, {4, 3}, {0, 3}, {0, 0}, {2, 0}};
  const auto cleaned = mgpr::runtime::without_collinear_points(starting_mid);
  EXPECT_EQ(cleaned.size(), 5U);
  EXPECT_EQ(cleaned.front(), cleaned.back());
  EXPECT_EQ(std::llabs(mgpr::runtime::twice_area(cleaned)), 24);
  // A square with a 1x1 hole: 16 - 1.
  const mgpr::runtime::PixelPolygon holed{
      {{{0, 0}, {4, 0}, {4, 4}, {0, 4}, {0, 0}}, {{1, 1}, {1, 2}, {2, 2}, {2, 1}, {1, 1}}}};
  EXPECT_DOUBLE_EQ(mgpr::runtime::pixel_area(holed), 15);
}

}  // namespace

namespace {

using mgpr::runtime::append_region_text;
using mgpr::runtime::read_region_text;
using mgpr::runtime::RegionPiece;

TEST(RegionText, RegionsReadBackAsWrittenAndDamageIsRefusedWhole) {
  const mgpr::runtime::ClassRegion first{
      1, 1428, 817.8982840776443, {{Side::kBottom, 56, 56, 75}, {Side::kRight, 104, 2, 3}}};
  const mgpr::runtime::PixelPolygon square{
      {{{0, 0}, {2, 0}, {2, 2}, {0, 2}, {0, 0}}, {{1, 1}, {1, 2}, {2, 2}, {2, 1}, {1, 1}}}};
  const mgpr::runtime::ClassRegion second{2, 4, 0.1 + 0.2, {}};
  std::string text;
  append_region_text(text, first, square);
  append_region_text(text, second, square);
  std::vector<RegionPiece> pieces;
  ASSERT_TRUE(read_region_text(text, pieces)) << text;
  const std::vector<RegionPiece> expected{{first, square}, {second, square}};
  EXPECT_EQ(pieces, expected);  // the score sums to the last bit
  EXPECT_TRUE(read_region_text("", pieces));
  EXPECT_EQ(pieces.size(), 2U);
  for (const auto* damaged :
       {"1 4 2|", "1 4 2||0,0 2,0 0,0", "1 4 2||0,0 2,0 2,2 0,2", "1 0 2||0,0 2,0 2,2 0,0",
        "300 4 2||0,0 2,0 2,2 0,2 0,0", "1 4 nan||0,0 2,0 2,2 0,2 0,0", "1 4 2|x,1,2,3|0,0 2,0 2,2 0,2 0,0"}) {
    std::vector<RegionPiece> none{{first, square}};
    EXPECT_FALSE(read_region_text(std::string(text) + ";" + damaged, none)) << damaged;
    EXPECT_EQ(none.size(), 1U) << damaged << ": nothing of a refused text is kept";
  }
}

}  // namespace
