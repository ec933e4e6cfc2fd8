// Bad inputs fail at start-up with a UsageError that names the file, says what is
// wrong and how to fix it; a raster that goes away mid-run fails the read by name.
#include <gdal_priv.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "mgpr/error.hpp"
#include "source/tile_source.hpp"
#include "support/error_of.hpp"
#include "support/rasters.hpp"

namespace {

using mgpr::UsageError;
using mgpr::runtime::SourceOptions;
using mgpr::test::RasterSpec;
using mgpr::test::TempDir;
using testing::HasSubstr;

std::string usage_error(const SourceOptions& config) {
  return mgpr::test::error_of([&] { (void)mgpr::runtime::make_tile_source(config); });
}

SourceOptions reading(const std::string& path) {
  SourceOptions config;
  config.rasters = {path};
  return config;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(RasterErrors, MissingRaster) {
  TempDir scratch;
  const auto path = scratch.file("nowhere.tif");
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message, HasSubstr("'" + path + "' does not exist"));
  EXPECT_THAT(message, HasSubstr("check the path"));
}

TEST(RasterErrors, AMissingArchiveOfAVsiPathIsNamed) {
  TempDir scratch;
  const auto path = "/vsizip/" + scratch.file("gone.zip") + "/ortho.tif";
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message,
              HasSubstr("raster '" + path + "' is read from '" + scratch.file("gone.zip") + "', which does not exist"));
}

TEST(RasterErrors, AColonInAFileNameIsStillAPathOnThisMachine) {
  TempDir scratch;
  const auto path = scratch.file("2024-01-01T10:00.tif");
  EXPECT_THAT(usage_error(reading(path)), HasSubstr("'" + path + "' does not exist"));
}

TEST(RasterErrors, TextFile) {
  TempDir scratch;
  const auto path = scratch.file("notes.txt");
  write_text(path, "these are field notes, not a raster\n");
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message, HasSubstr("'" + path + "' cannot be opened as a raster"));
  EXPECT_THAT(message, HasSubstr("not recognized as a supported file format"));  // GDAL's own words
  EXPECT_THAT(message, HasSubstr("gdalinfo " + path));
}

// A FIFO given as the raster blocked the run for good (GDAL's open waits for
// a writer); it, and anything else that is not a file or folder, is refused at once.
TEST(RasterErrors, AFifoIsRefusedWithoutWaiting) {
  TempDir scratch;
  const auto path = scratch.file("pipe.tif");
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto future = std::async(std::launch::async, [&] { return usage_error(reading(path)); });
  if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Release the blocked open so the test can end, then fail.
    std::ofstream(path) << "x";
    FAIL() << "opening a FIFO as a raster blocked";
  }
  const auto message = future.get();
  EXPECT_THAT(message, HasSubstr("'" + path + "' is a FIFO, not a raster file"));
}

// A geotransform whose pixel axes are parallel maps no pixel to one place: refused at
// start-up, naming the raster, instead of failing when results are written hours later.
TEST(RasterErrors, GeotransformThatCannotBeInverted) {
  TempDir scratch;
  const auto path = scratch.file("singular.tif");
  {
    GDALAllRegister();
    auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
    GDALDatasetUniquePtr dataset(driver->Create(path.c_str(), 32, 32, 3, GDT_Byte, nullptr));
    ASSERT_TRUE(dataset);
    std::array<double, 6> singular{500000.0, 1.0, 1.0, 4500000.0, 1.0, 1.0};
    ASSERT_EQ(dataset->SetGeoTransform(singular.data()), CE_None);
  }
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message, HasSubstr("raster '" + path + "' has a geotransform"));
  EXPECT_THAT(message, HasSubstr("not invertible"));
  EXPECT_THAT(message, HasSubstr("fix its georeferencing"));
}

TEST(RasterErrors, CorruptTiffHeader) {
  TempDir scratch;
  const auto path = scratch.file("corrupt.tif");
  write_text(path, std::string("II*\0", 4) + std::string(200, '\x7f'));
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message, HasSubstr("'" + path + "' cannot be opened as a raster"));
  EXPECT_THAT(message, HasSubstr("copy it again"));
}

TEST(RasterErrors, TruncatedGeoTiff) {
  TempDir scratch;
  RasterSpec spec;
  spec.width = 256;
  spec.height = 256;
  const auto path = mgpr::test::write_raster(scratch.file("cut.tif"), spec);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message, HasSubstr("'" + path + "' cannot be read to its end"));
  EXPECT_THAT(message, HasSubstr("truncated or corrupt"));
  EXPECT_THAT(message, HasSubstr("gdalinfo -checksum " + path));
}

TEST(RasterErrors, BandsOutOfRange) {
  TempDir scratch;
  RasterSpec spec;
  spec.bands = 2;
  const auto path = mgpr::test::write_raster(scratch.file("two.tif"), spec);
  auto config = reading(path);
  config.bands = {1, 3};
  auto message = usage_error(config);
  EXPECT_THAT(message, HasSubstr("'" + path + "' has 2 bands, but bands=1,3 asks for band 3"));
  EXPECT_THAT(message, HasSubstr("choose band numbers from 1 to 2"));
  config.bands = {0};
  message = usage_error(config);
  EXPECT_THAT(message, HasSubstr("asks for band 0"));
}

TEST(RasterErrors, MeanAndStdLengthsMustMatchTheBands) {
  TempDir scratch;
  const auto path = mgpr::test::write_raster(scratch.file("rgb.tif"), RasterSpec{});
  auto config = reading(path);
  config.mean = {0.4, 0.5};
  auto message = usage_error(config);
  EXPECT_THAT(message, HasSubstr("mean has 2 values but 3 bands are selected from raster '" + path + "'"));
  EXPECT_THAT(message, HasSubstr("one value for all bands or one per selected band"));
  config.mean = {0.4, 0.5, 0.6};
  config.std = {0.2, 0.2, 0.2, 0.2};
  message = usage_error(config);
  EXPECT_THAT(message, HasSubstr("std has 4 values"));
  config.std = {0.0};
  message = usage_error(config);
  EXPECT_THAT(message, HasSubstr("must be positive"));
}

TEST(RasterErrors, UnsupportedDataType) {
  TempDir scratch;
  RasterSpec spec;
  spec.type = GDT_CInt16;
  spec.bands = 1;
  const auto path = mgpr::test::write_raster(scratch.file("complex.tif"), spec);
  const auto message = usage_error(reading(path));
  EXPECT_THAT(message, HasSubstr("'" + path + "' has data type CInt16"));
  EXPECT_THAT(message, HasSubstr("gdal_translate -ot Float32"));
}

TEST(RasterErrors, RastersMustGiveTheSameChannelCount) {
  TempDir scratch;
  RasterSpec grey;
  grey.bands = 1;
  const auto rgb = mgpr::test::write_raster(scratch.file("rgb.tif"), RasterSpec{});
  const auto single = mgpr::test::write_raster(scratch.file("grey.tif"), grey);
  SourceOptions config;
  config.rasters = {rgb, single};
  const auto message = usage_error(config);
  EXPECT_THAT(message, HasSubstr("'" + single + "' gives the model 1 channel (bands=1) but '" + rgb + "' gives 3"));
}

TEST(RasterErrors, NoRasterAndAbsurdTileSize) {
  EXPECT_THAT(usage_error(SourceOptions{}), HasSubstr("use_fake_data=true"));
  TempDir scratch;
  auto config = reading(mgpr::test::write_raster(scratch.file("rgb.tif"), RasterSpec{}));
  config.tile_size = 0;
  EXPECT_THAT(usage_error(config), HasSubstr("tile_size=0 must be at least 1"));
  config.tile_size = 100000;
  EXPECT_THAT(usage_error(config), HasSubstr("tile_size=100000 makes"));
}

TEST(RasterErrors, RasterGoneBeforeTheReaderOpensItFailsTheReadByName) {
  TempDir scratch;
  const auto path = mgpr::test::write_raster(scratch.file("gone.tif"), RasterSpec{});
  const auto source = mgpr::runtime::make_tile_source(reading(path));
  std::filesystem::remove(path);
  const auto reader = source->open_reader();  // opens lazily, on its first read
  mgpr::runtime::TileData data;
  try {
    reader->read(source->tiles().front(), data);
    FAIL() << "read of a removed raster succeeded";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("'" + path + "' could not be reopened"));
  }
}

}  // namespace
