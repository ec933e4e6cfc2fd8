#pragma once
// The segmentation mosaic tests' pieces: a small raster cut into unequal cores with
// known classes and probabilities, written as pieces with a rotated georeference, and
// the checks that read a mosaic of them back with GDAL.
#include <gdal_rat.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "read_back.hpp"
#include "support/rasters.hpp"
#include "writers/segment_mosaic.hpp"

namespace mgpr::test::mosaic {

using mgpr::runtime::GeoTransform;
using mgpr::runtime::kNoClass;
using mgpr::runtime::MosaicPiece;
using mgpr::runtime::PixelWindow;
using mgpr::runtime::RasterGeoreference;

inline constexpr int kWidth = 80;
inline constexpr int kHeight = 60;
// Unequal cores, so a piece put in the wrong place or with rows and columns swapped shows.
inline const std::vector<PixelWindow> kCores{{0, 0, 50, 25}, {50, 0, 30, 25}, {0, 25, 50, 35}, {50, 25, 30, 35}};

inline std::uint8_t class_at(int column, int row) { return static_cast<std::uint8_t>((column * 3 + row * 5) % 11); }
inline float probability_at(int column, int row) {
  return static_cast<float>(column) * 0.01F + static_cast<float>(row) * 0.5F;
}

inline RasterGeoreference rotated_georef() {
  return {GeoTransform(std::array<double, 6>{500000.1, 0.3, 0.07, 4500000.3, 0.05, -0.3}), mgpr::test::epsg_wkt(32633)};
}

template <typename T, typename F>
std::vector<T> values_of(const PixelWindow& core, F value_at) {
  std::vector<T> values;
  for (int row = core.y; row < core.y + core.height; ++row) {
    for (int column = core.x; column < core.x + core.width; ++column) values.push_back(value_at(column, row));
  }
  return values;
}

inline std::vector<MosaicPiece> write_pieces(const std::filesystem::path& folder, const RasterGeoreference& georef,
                                             bool probabilities, std::size_t count = 4) {
  std::filesystem::create_directories(folder);
  std::vector<MosaicPiece> pieces;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& core = kCores[i];
    const auto file = folder / ("piece_" + std::to_string(i) + ".tif");
    if (probabilities) {
      mgpr::runtime::write_probability_piece(file, core, values_of<float>(core, probability_at), georef);
    } else {
      mgpr::runtime::write_class_piece(file, core, values_of<std::uint8_t>(core, class_at), georef);
    }
    pieces.push_back({file, core});
  }
  return pieces;
}

inline void expect_georeference(GDALDataset& dataset, const RasterGeoreference& georef) {
  std::array<double, 6> terms{};
  ASSERT_EQ(dataset.GetGeoTransform(terms.data()), CE_None);
  EXPECT_EQ(terms, georef.transform.terms());  // bit for bit: written with 17 digits
  const auto srs = mgpr::test::srs_from_wkt(georef.crs_wkt);
  ASSERT_NE(dataset.GetSpatialRef(), nullptr);
  EXPECT_TRUE(dataset.GetSpatialRef()->IsSame(&srs));
}

inline void expect_classes(const std::filesystem::path& raster) {
  const auto dataset = mgpr::test::open_dataset(raster);
  ASSERT_EQ(dataset->GetRasterXSize(), kWidth);
  ASSERT_EQ(dataset->GetRasterYSize(), kHeight);
  ASSERT_EQ(dataset->GetRasterCount(), 1);
  auto& band = *dataset->GetRasterBand(1);
  EXPECT_EQ(band.GetRasterDataType(), GDT_Byte);
  int has_nodata = 0;
  EXPECT_EQ(band.GetNoDataValue(&has_nodata), kNoClass);
  EXPECT_TRUE(has_nodata);
  EXPECT_EQ(mgpr::test::read_band<std::uint8_t>(band, GDT_Byte),
            values_of<std::uint8_t>({0, 0, kWidth, kHeight}, class_at));
}

inline const std::vector<std::string> kNames{"__background__", "tree", "a & <b>"};

inline void expect_class_names(const std::filesystem::path& raster) {
  const auto dataset = mgpr::test::open_dataset(raster);
  auto* band = dataset->GetRasterBand(1);
  // GDAL 3.6's GeoTIFF driver reads the .aux.xml side-car on the first call for
  // georeferencing or metadata, not for category names; gdalinfo and QGIS ask for the
  // georeferencing first, and so does this.
  std::array<double, 6> terms{};
  (void)dataset->GetGeoTransform(terms.data());
  const CPLStringList categories(GDALGetRasterCategoryNames(GDALRasterBand::ToHandle(band)), FALSE);
  ASSERT_EQ(categories.size(), 3) << raster;
  EXPECT_STREQ(categories[0], "__background__");
  EXPECT_STREQ(categories[1], "tree");
  EXPECT_STREQ(categories[2], "a & <b>");
  const auto* table = band->GetDefaultRAT();
  ASSERT_NE(table, nullptr) << raster;
  ASSERT_EQ(table->GetColumnCount(), 2);
  EXPECT_STREQ(table->GetNameOfCol(0), "value");
  EXPECT_EQ(table->GetUsageOfCol(0), GFU_MinMax);
  EXPECT_STREQ(table->GetNameOfCol(1), "class_name");
  EXPECT_EQ(table->GetUsageOfCol(1), GFU_Name);
  ASSERT_EQ(table->GetRowCount(), 3);
  for (int row = 0; row < 3; ++row) {
    EXPECT_EQ(table->GetValueAsInt(row, 0), row);
    EXPECT_EQ(table->GetValueAsString(row, 1), kNames[static_cast<std::size_t>(row)]);
  }
}

}  // namespace mgpr::test::mosaic
