// Segmentation output, continued: class names in the VRT and its COG, and the mosaic
// put back on the raster's own grid when the raster was read at the model's resolution.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "mosaic_pieces.hpp"

using namespace mgpr::test::mosaic;  // NOLINT(google-build-using-namespace): every test here cuts these pieces

namespace {

using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::HasSubstr;

}  // namespace

// The class names go into the class band as category names and an attribute
// table (value, class_name), in the VRT and in its COG copy, where GeoTIFF keeps them
// in <cog>.aux.xml (renamed into place with it); a COG written again without names loses
// the stale side-car. Without names there is no side-car (CogEqualsTheVrt... in
// mosaic_test.cpp).
TEST(SegmentMosaic, ClassNamesAreCategoryNamesAndAnAttributeTableInTheVrtAndTheCog) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path() / "pieces", georef, false);
  const auto vrt = scratch.path() / "classes.vrt";
  const auto cog = scratch.path() / "classes.tif";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false, kNames);
  expect_classes(vrt);
  expect_class_names(vrt);
  mgpr::runtime::write_cog(vrt, cog);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()),
              ElementsAre("classes.tif", "classes.tif.aux.xml", "classes.vrt", "pieces"));
  expect_classes(cog);
  expect_class_names(cog);

  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false);
  mgpr::runtime::write_cog(vrt, cog);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("classes.tif", "classes.vrt", "pieces"));
  const auto plain = mgpr::test::open_dataset(cog);
  EXPECT_EQ(plain->GetRasterBand(1)->GetCategoryNames(), nullptr);
  EXPECT_EQ(plain->GetRasterBand(1)->GetDefaultRAT(), nullptr);
}

// segment_resolution=raster: a mosaic on the model's grid (here the raster's pixels
// doubled, as a raster of 0.15 m read at a model's 0.3 m is) is put back on the raster's
// own grid by nearest neighbour: each model pixel covers 2 x 2 raster pixels, with the
// raster's geotransform (rotated) and CRS, nodata and the class names.
TEST(SegmentMosaic, ResampledVrtPutsTheMosaicBackOnTheRastersOwnGrid) {
  TempDir scratch;
  const auto model = rotated_georef();
  const auto& t = model.transform.terms();
  const GeoTransform own(std::array<double, 6>{t[0], t[1] / 2, t[2] / 2, t[3], t[4] / 2, t[5] / 2});
  for (const bool probabilities : {false, true}) {
    const auto pieces = write_pieces(scratch.path() / "pieces", model, probabilities);
    const auto inner = scratch.path() / "pieces" / "model_grid.vrt";
    const auto vrt = scratch.path() / "classes.vrt";
    mgpr::runtime::write_mosaic_vrt(inner, pieces, kWidth, kHeight, model, probabilities, kNames);
    mgpr::runtime::write_resampled_vrt(vrt, inner, {kWidth, kHeight, model.transform}, {2 * kWidth, 2 * kHeight, own},
                                       model.crs_wkt, probabilities, kNames);
    const auto dataset = mgpr::test::open_dataset(vrt);
    ASSERT_EQ(dataset->GetRasterXSize(), 2 * kWidth);
    ASSERT_EQ(dataset->GetRasterYSize(), 2 * kHeight);
    expect_georeference(*dataset, {own, model.crs_wkt});
    auto& band = *dataset->GetRasterBand(1);
    if (probabilities) {
      EXPECT_EQ(band.GetRasterDataType(), GDT_Float32);
      const auto values = mgpr::test::read_band<float>(band, GDT_Float32);
      for (int row = 0; row < 2 * kHeight; ++row) {
        for (int column = 0; column < 2 * kWidth; ++column) {
          ASSERT_EQ(values[static_cast<std::size_t>(row) * 2 * kWidth + column], probability_at(column / 2, row / 2))
              << column << "," << row;
        }
      }
      continue;
    }
    int has_nodata = 0;
    EXPECT_EQ(band.GetNoDataValue(&has_nodata), kNoClass);
    EXPECT_EQ(has_nodata, 1);
    const auto values = mgpr::test::read_band<std::uint8_t>(band, GDT_Byte);
    for (int row = 0; row < 2 * kHeight; ++row) {
      for (int column = 0; column < 2 * kWidth; ++column) {
        ASSERT_EQ(values[static_cast<std::size_t>(row) * 2 * kWidth + column], class_at(column / 2, row / 2))
            << column << "," << row;
      }
    }
    expect_class_names(vrt);
    // The COG of it is on the raster's grid too.
    const auto cog = scratch.path() / "classes.tif";
    mgpr::runtime::write_cog(vrt, cog);
    const auto copy = mgpr::test::open_dataset(cog);
    EXPECT_EQ(copy->GetRasterXSize(), 2 * kWidth);
    EXPECT_EQ(mgpr::test::read_band<std::uint8_t>(*copy->GetRasterBand(1), GDT_Byte), values);
    // Relative paths: the folder can move.
    std::filesystem::rename(scratch.path(), scratch.path().string() + "-moved");
    const auto moved = mgpr::test::open_dataset(scratch.path().string() + "-moved/classes.vrt");
    EXPECT_EQ(mgpr::test::read_band<std::uint8_t>(*moved->GetRasterBand(1), GDT_Byte), values);
    std::filesystem::rename(scratch.path().string() + "-moved", scratch.path());
  }
}

// A ratio that is not whole (model pixels of 1.5 raster pixels): each raster pixel takes
// the model pixel its centre lies in; centres on a border between two are not checked.
TEST(SegmentMosaic, ResampledVrtTakesThePixelUnderEachCentre) {
  TempDir scratch;
  const RasterGeoreference model{GeoTransform(std::array<double, 6>{1000, 3, 0, 2000, 0, -3}), ""};
  const GeoTransform own(std::array<double, 6>{1000, 2, 0, 2000, 0, -2});
  const auto pieces = write_pieces(scratch.path() / "pieces", model, false);
  const auto inner = scratch.path() / "pieces" / "model_grid.vrt";
  const auto vrt = scratch.path() / "classes.vrt";
  mgpr::runtime::write_mosaic_vrt(inner, pieces, kWidth, kHeight, model, false);
  mgpr::runtime::write_resampled_vrt(vrt, inner, {kWidth, kHeight, model.transform}, {120, 90, own}, "", false);
  const auto dataset = mgpr::test::open_dataset(vrt);
  const auto values = mgpr::test::read_band<std::uint8_t>(*dataset->GetRasterBand(1), GDT_Byte);
  ASSERT_EQ(values.size(), 120U * 90U);
  for (int row = 0; row < 90; ++row) {
    for (int column = 0; column < 120; ++column) {
      if (column % 3 == 1 || row % 3 == 1) continue;  // centre (c + 0.5) / 1.5 on a border
      const auto expected = class_at(static_cast<int>((column + 0.5) / 1.5), static_cast<int>((row + 0.5) / 1.5));
      ASSERT_EQ(values[static_cast<std::size_t>(row) * 120 + column], expected) << column << "," << row;
    }
  }
}

// A grid turned against the raster's own cannot be put back by scaling: refused by name.
TEST(SegmentMosaic, ResampledVrtRefusesAGridTurnedAgainstTheRasters) {
  TempDir scratch;
  const GeoTransform model(std::array<double, 6>{0, 2, 0, 0, 0, -2});
  const GeoTransform turned(std::array<double, 6>{0, 0.7, 0.7, 0, 0.7, -0.7});
  const auto vrt = scratch.path() / "classes.vrt";
  EXPECT_THAT(mgpr::test::error_of<std::invalid_argument>([&] {
                mgpr::runtime::write_resampled_vrt(vrt, scratch.path() / "inner.vrt", {10, 10, model}, {20, 20, turned},
                                                   "", false);
              }),
              HasSubstr("classes.vrt"));
  EXPECT_FALSE(std::filesystem::exists(vrt));
}
