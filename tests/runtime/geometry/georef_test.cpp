#include "geometry/georef.hpp"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace {

using mgpr::runtime::GeoTransform;
using mgpr::runtime::MapPoint;

// Rotated and sheared, with terms that are exact in binary so corners compare exactly:
// map x = 1000 + 2 column + 0.5 row, map y = 5000 + 0.25 column - 3 row.
constexpr std::array<double, 6> kRotated{1000, 2, 0.5, 5000, 0.25, -3};

TEST(Georef, DefaultAndEmptyTermsAreTheIdentity) {
  EXPECT_TRUE(GeoTransform().is_identity());
  EXPECT_TRUE(GeoTransform(std::span<const double>{}).is_identity());
  EXPECT_EQ(GeoTransform().to_map(12.5, 7), (MapPoint{12.5, 7}));
  EXPECT_FALSE(GeoTransform(kRotated).is_identity());
}

TEST(Georef, RotatedTermsMapPixelsToMap) {
  const GeoTransform transform(kRotated);
  EXPECT_EQ(transform.to_map(0, 0), (MapPoint{1000, 5000}));
  EXPECT_EQ(transform.to_map(10, 20), (MapPoint{1030, 4942.5}));
  EXPECT_EQ(transform.terms(), kRotated);
}

TEST(Georef, ToPixelUndoesToMap) {
  const GeoTransform transform(kRotated);
  for (const double column : {0.0, 0.5, 17.25, 1023.0, -3.0}) {
    for (const double row : {0.0, 0.5, 99.75, 4096.0}) {
      const MapPoint map = transform.to_map(column, row);
      const MapPoint pixel = transform.to_pixel(map.x, map.y);
      EXPECT_NEAR(pixel.x, column, 1e-9) << column << " " << row;
      EXPECT_NEAR(pixel.y, row, 1e-9) << column << " " << row;
    }
  }
}

TEST(Georef, FootprintIsTheRotatedRingOfCorners) {
  const GeoTransform transform(kRotated);
  // (x1,y1), (x2,y1), (x2,y2), (x1,y2) for the rectangle [4, 8) x [2, 6), by hand.
  const std::array<MapPoint, 4> expected{MapPoint{1009, 4995}, MapPoint{1017, 4996}, MapPoint{1019, 4984},
                                         MapPoint{1011, 4983}};
  EXPECT_EQ(transform.footprint(4, 2, 8, 6), expected);
}

TEST(Georef, ShiftedWindowStartsAtTheParentsPixel) {
  const GeoTransform transform(kRotated);
  const GeoTransform window = transform.shifted(256, 128);
  EXPECT_EQ(window.to_map(0, 0), transform.to_map(256, 128));
  for (const double column : {0.0, 1.0, 31.5, 255.0}) {
    for (const double row : {0.0, 2.0, 100.25}) {
      const MapPoint inside = window.to_map(column, row);
      const MapPoint outside = transform.to_map(256 + column, 128 + row);
      EXPECT_DOUBLE_EQ(inside.x, outside.x);
      EXPECT_DOUBLE_EQ(inside.y, outside.y);
    }
  }
  EXPECT_TRUE(GeoTransform().shifted(0, 0).is_identity());
  EXPECT_FALSE(GeoTransform().shifted(1, 0).is_identity());
}

TEST(Georef, RejectsWrongTermCountsAndSingularTransforms) {
  const std::vector<double> five{0, 1, 0, 0, 0};
  const std::vector<double> seven{0, 1, 0, 0, 0, 1, 0};
  EXPECT_THROW(GeoTransform{five}, std::invalid_argument);
  EXPECT_THROW(GeoTransform{seven}, std::invalid_argument);
  // Columns and rows along the same map direction: no inverse.
  const std::array<double, 6> singular{0, 1, 2, 0, 2, 4};
  EXPECT_THROW(GeoTransform{singular}, std::invalid_argument);
  const std::array<double, 6> zero_pixel{0, 0, 0, 0, 0, 1};
  EXPECT_THROW(GeoTransform{zero_pixel}, std::invalid_argument);
}

}  // namespace
