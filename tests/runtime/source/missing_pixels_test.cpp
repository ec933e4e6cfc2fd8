// Which pixels are missing: a pixel of an RGB photograph is missing when every
// selected band holds its nodata value, or where the raster's mask or alpha band says
// so, not when one channel is saturated; nodata=none and nodata=VALUE replace the
// raster's own rule; NaN is always missing. Each raster here is a few chosen pixels,
// written by GDAL, read as one tile.
#include <cpl_conv.h>
#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mgpr/run_choices.hpp"
#include "source/tile_source.hpp"
#include "support/rasters.hpp"

namespace {

using mgpr::NodataRule;
using mgpr::runtime::RasterDescription;
using mgpr::runtime::SourceOptions;
using mgpr::runtime::TileData;
using mgpr::test::PixelRaster;
using mgpr::test::TempDir;

constexpr int kSide = 3;  // 3 x 3 pixels, read as one 3 x 3 tile (no padding)
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A kSide x kSide raster whose pixel i holds pixels[i] (one value per band).
PixelRaster raster_of(const std::vector<std::vector<double>>& pixels, GDALDataType type = GDT_Byte) {
  PixelRaster raster;
  raster.type = type;
  raster.width = kSide;
  raster.height = kSide;
  raster.bands.assign(pixels.front().size(), std::vector<double>(pixels.size()));
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    for (std::size_t b = 0; b < pixels[i].size(); ++b) raster.bands[b][i] = pixels[i][b];
  }
  return raster;
}

// Nine RGB pixels: saturated in one channel, in all, black, and ordinary ones.
const std::vector<std::vector<double>> kRgb = {
    {255, 10, 10}, {255, 255, 255}, {10, 255, 255}, {0, 0, 0},    {0, 0, 5},
    {40, 50, 60},  {0, 0, 255},     {255, 255, 0},  {70, 80, 90},
};
constexpr std::size_t kSaturatedRed = 0;
constexpr std::size_t kWhite = 1;
constexpr std::size_t kBlack = 3;
constexpr std::size_t kAlmostBlack = 4;
constexpr std::size_t kBlue = 6;

struct Read {
  RasterDescription description;
  TileData tile;
  int channels = 0;
};

Read read_tile(const std::string& path, NodataRule rule = {}, std::vector<int> bands = {}) {
  SourceOptions options;
  options.rasters = {path};
  options.tile_size = kSide;
  options.nodata = rule;
  options.bands = std::move(bands);
  options.scale = 1.0;  // fed values are the raw values
  const auto source = mgpr::runtime::make_tile_source(options);
  Read read{source->rasters().front(), {}, source->channels()};
  EXPECT_EQ(source->tiles().size(), 1U);
  source->open_reader()->read(source->tiles().front(), read.tile);
  return read;
}

bool is_valid(const TileData& tile, std::size_t pixel) { return tile.valid.empty() || tile.valid[pixel] != 0; }

float fed(const TileData& tile, int channel, std::size_t pixel) {
  return tile.pixels[static_cast<std::size_t>(channel) * kSide * kSide + pixel];
}

// Every pixel is missing exactly where `missing` says, zero in every channel there, and
// fed its values from `pixels` (bands `bands`, 0-based) elsewhere.
void expect_pixels(const Read& read, const std::vector<std::vector<double>>& pixels, const std::vector<int>& bands,
                   const std::vector<std::size_t>& missing) {
  ASSERT_EQ(read.channels, static_cast<int>(bands.size()));
  ASSERT_EQ(read.tile.pixels.size(), bands.size() * kSide * kSide);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const bool want_missing = std::find(missing.begin(), missing.end(), i) != missing.end();
    EXPECT_EQ(is_valid(read.tile, i), !want_missing) << "pixel " << i;
    for (std::size_t c = 0; c < bands.size(); ++c) {
      const double want = want_missing ? 0.0 : pixels[i][static_cast<std::size_t>(bands[c])];
      EXPECT_EQ(fed(read.tile, static_cast<int>(c), i), static_cast<float>(want)) << "pixel " << i << " channel " << c;
    }
  }
}

int mask_flags(const std::string& path) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  return dataset ? dataset->GetRasterBand(1)->GetMaskFlags() : -1;
}

TEST(MissingPixels, NodataInEveryBandIsMissingOneSaturatedChannelIsFed) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {255.0, 255.0, 255.0};
  const auto path = mgpr::test::write_pixels(scratch.file("rgb255.tif"), raster);
  ASSERT_EQ(mask_flags(path), GMF_NODATA);
  const auto read = read_tile(path);
  EXPECT_EQ(read.description.missing_pixels, "nodata 255 in all bands");
  EXPECT_EQ(read.description.nodata, 255.0);
  expect_pixels(read, kRgb, {0, 1, 2}, {kWhite});
  EXPECT_EQ(fed(read.tile, 0, kSaturatedRed), 255.0F);  // (255, 10, 10) as it is
  EXPECT_EQ(fed(read.tile, 1, kSaturatedRed), 10.0F);
}

TEST(MissingPixels, EachBandIsComparedWithItsOwnNodata) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {0.0, 0.0, 255.0};
  const auto read = read_tile(mgpr::test::write_pixels(scratch.file("mixed.tif"), raster));
  EXPECT_EQ(read.description.missing_pixels, "nodata 0, 0, 255 in bands 1, 2, 3 at once");
  expect_pixels(read, kRgb, {0, 1, 2}, {kBlue});
}

TEST(MissingPixels, ABandWithoutNodataMakesNoPixelNodataInEveryBand) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {255.0, std::nullopt, 255.0};
  const auto read = read_tile(mgpr::test::write_pixels(scratch.file("partial.tif"), raster));
  EXPECT_EQ(read.description.missing_pixels, "none (band 2 has no nodata value, so no pixel is nodata in all bands)");
  expect_pixels(read, kRgb, {0, 1, 2}, {});
}

TEST(MissingPixels, OneSelectedBandIsMissingWhereItHoldsItsNodata) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {255.0, 255.0, 255.0};
  const auto read = read_tile(mgpr::test::write_pixels(scratch.file("red.tif"), raster), {}, {1});
  EXPECT_EQ(read.description.missing_pixels, "nodata 255");
  expect_pixels(read, kRgb, {0}, {0, kWhite, 7});
}

TEST(MissingPixels, RgbaAlphaZeroIsMissingAndAlphaIsNotFed) {
  TempDir scratch;
  std::vector<std::vector<double>> rgba;
  const std::vector<double> alpha = {255, 0, 255, 128, 0, 255, 255, 1, 255};
  for (std::size_t i = 0; i < kRgb.size(); ++i) rgba.push_back({kRgb[i][0], kRgb[i][1], kRgb[i][2], alpha[i]});
  auto raster = raster_of(rgba);
  raster.alpha_band = 4;
  const auto path = mgpr::test::write_pixels(scratch.file("rgba.tif"), raster);
  ASSERT_EQ(mask_flags(path), GMF_ALPHA | GMF_PER_DATASET);
  const auto read = read_tile(path);
  EXPECT_EQ(read.description.bands, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(read.description.missing_pixels, "alpha band 4");
  expect_pixels(read, rgba, {0, 1, 2}, {1, 4});
}

TEST(MissingPixels, GrayAndAlphaFeedsTheGrayBandOnly) {
  TempDir scratch;
  const std::vector<std::vector<double>> gray_alpha = {{10, 255}, {20, 0},  {30, 255}, {40, 255}, {50, 0},
                                                       {60, 255}, {70, 10}, {80, 255}, {255, 255}};
  auto raster = raster_of(gray_alpha);
  raster.alpha_band = 2;
  const auto path = mgpr::test::write_pixels(scratch.file("gray_alpha.tif"), raster);
  ASSERT_EQ(mask_flags(path), GMF_ALPHA | GMF_PER_DATASET);
  const auto read = read_tile(path);
  EXPECT_EQ(read.description.bands, (std::vector<int>{1}));
  EXPECT_EQ(read.description.missing_pixels, "alpha band 2");
  expect_pixels(read, gray_alpha, {0}, {1, 4});

  // Asked for by name, the alpha band is fed; it still masks.
  const auto both = read_tile(path, {}, {1, 2});
  EXPECT_EQ(both.description.bands, (std::vector<int>{1, 2}));
  expect_pixels(both, gray_alpha, {0, 1}, {1, 4});
}

TEST(MissingPixels, InternalMaskZeroIsMissing) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {255.0, 255.0, 255.0};  // the mask wins over nodata, as in GDAL
  raster.mask = {255, 255, 0, 255, 255, 255, 0, 255, 255};
  const auto path = mgpr::test::write_pixels(scratch.file("masked.tif"), raster);
  ASSERT_EQ(mask_flags(path), GMF_PER_DATASET);
  ASSERT_FALSE(std::filesystem::exists(path + ".msk"));
  const auto read = read_tile(path);
  EXPECT_EQ(read.description.missing_pixels, "internal mask");
  expect_pixels(read, kRgb, {0, 1, 2}, {2, kBlue});
}

// GDAL finds a .msk beside a local raster by probing for it: mgpr opens rasters without
// listing their folder (gdal/remote_reads.hpp's OpenWithoutListing).
TEST(MissingPixels, MaskFileZeroIsMissing) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.mask = {0, 255, 255, 255, 255, 255, 255, 255, 0};
  raster.mask_file = true;
  const auto path = mgpr::test::write_pixels(scratch.file("mask_file.tif"), raster);
  ASSERT_TRUE(std::filesystem::exists(path + ".msk"));
  ASSERT_EQ(mask_flags(path), GMF_PER_DATASET);
  const auto read = read_tile(path);
  EXPECT_EQ(read.description.missing_pixels, "mask file '" + path + ".msk'");
  expect_pixels(read, kRgb, {0, 1, 2}, {0, 8});
}

TEST(MissingPixels, NodataNoneFeedsEveryPixelAndIgnoresTheMask) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {255.0, 255.0, 255.0};
  const auto read = read_tile(mgpr::test::write_pixels(scratch.file("none.tif"), raster), {NodataRule::Kind::kNone});
  EXPECT_EQ(read.description.missing_pixels, "none (nodata=none)");
  EXPECT_EQ(read.description.nodata, 255.0);  // as the raster declares it
  expect_pixels(read, kRgb, {0, 1, 2}, {});
  EXPECT_EQ(fed(read.tile, 2, kWhite), 255.0F);

  raster.mask = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  const auto masked =
      read_tile(mgpr::test::write_pixels(scratch.file("none_mask.tif"), raster), {NodataRule::Kind::kNone});
  expect_pixels(masked, kRgb, {0, 1, 2}, {});
}

TEST(MissingPixels, NodataValueMasksPixelsWithItInEveryBandOnly) {
  TempDir scratch;
  auto raster = raster_of(kRgb);
  raster.nodata = {255.0, 255.0, 255.0};                      // ignored under nodata=0
  raster.mask = {0, 255, 255, 255, 255, 255, 255, 255, 255};  // ignored too
  const auto read =
      read_tile(mgpr::test::write_pixels(scratch.file("zero.tif"), raster), {NodataRule::Kind::kValue, 0.0});
  EXPECT_EQ(read.description.missing_pixels, "nodata=0 in all bands");
  expect_pixels(read, kRgb, {0, 1, 2}, {kBlack});
  EXPECT_EQ(fed(read.tile, 2, kAlmostBlack), 5.0F);
}

TEST(MissingPixels, NodataValueNoPixelCanHoldMasksNothing) {
  TempDir scratch;
  const auto path = mgpr::test::write_pixels(scratch.file("byte.tif"), raster_of(kRgb));
  const auto read = read_tile(path, {NodataRule::Kind::kValue, 300.0});
  EXPECT_EQ(read.description.missing_pixels, "none (nodata=300 is no Byte value)");
  expect_pixels(read, kRgb, {0, 1, 2}, {});
  EXPECT_EQ(read_tile(path).description.missing_pixels, "none");
}

TEST(MissingPixels, NanInAnyBandIsAlwaysMissing) {
  TempDir scratch;
  const std::vector<std::vector<double>> floats = {
      {1.5, kNan, 2.0}, {0.25, 0.5, 0.75},  {kNan, kNan, kNan}, {-9999, -9999, -9999}, {-9999, 1, 2}, {3, 4, kNan},
      {0, 0, 0},        {1e6, -1e6, 0.125}, {7, 8, 9}};
  auto raster = raster_of(floats, GDT_Float32);
  const auto path = mgpr::test::write_pixels(scratch.file("float.tif"), raster);
  const auto own = read_tile(path);
  EXPECT_EQ(own.description.missing_pixels, "NaN in any band");
  expect_pixels(own, floats, {0, 1, 2}, {0, 2, 5});

  const auto none = read_tile(path, {NodataRule::Kind::kNone});
  EXPECT_EQ(none.description.missing_pixels, "none (nodata=none); NaN in any band");
  expect_pixels(none, floats, {0, 1, 2}, {0, 2, 5});

  raster.nodata = {-9999.0, -9999.0, -9999.0};
  const auto with_nodata = read_tile(mgpr::test::write_pixels(scratch.file("float_nodata.tif"), raster));
  EXPECT_EQ(with_nodata.description.missing_pixels, "nodata -9999 in all bands; NaN in any band");
  expect_pixels(with_nodata, floats, {0, 1, 2}, {0, 2, 3, 5});

  raster.nodata = {kNan, kNan, kNan};
  const auto nan_nodata = read_tile(mgpr::test::write_pixels(scratch.file("float_nan_nodata.tif"), raster));
  EXPECT_EQ(nan_nodata.description.missing_pixels, "NaN in any band");
  expect_pixels(nan_nodata, floats, {0, 1, 2}, {0, 2, 5});
}

}  // namespace
