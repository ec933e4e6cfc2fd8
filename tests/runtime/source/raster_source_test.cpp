// The GDAL source against GDAL itself: every pixel of every tile the reader produces
// must equal GDAL's own Float64 read of the window put through the same scaling.
#include <fmt/format.h>
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <ogr_spatialref.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "source/raster_source.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"
#include "support/rasters.hpp"

namespace {

using mgpr::runtime::ReaderPool;
using mgpr::runtime::SourceOptions;
using mgpr::runtime::Tile;
using mgpr::runtime::TileData;
using mgpr::runtime::TileId;
using mgpr::test::RasterSpec;
using mgpr::test::TempDir;

double default_scale(GDALDataType type) {
  switch (type) {
    case GDT_Byte:
      return 1.0 / 255.0;
    case GDT_UInt16:
      return 1.0 / 65535.0;
    case GDT_Int16:
      return 1.0 / 32767.0;
    default:
      return 1.0;
  }
}

double per_band(const std::vector<double>& values, std::size_t band, double fallback) {
  if (values.empty()) return fallback;
  return values.size() == 1 ? values.front() : values[band];
}

struct Expectation {
  RasterSpec spec;
  std::string path;
  SourceOptions config;
  std::vector<int> bands;  // the selection the source should have made
};

// Compares one tile with GDAL's read of its window, scaled as SourceOptions documents:
// value = (raw * scale - mean) / std; nodata in every band at once, NaN in any band, or
// outside the window gives 0 in every channel and valid 0; nodata in some bands only is
// data, fed as it is.
void expect_tile_matches_gdal(const TileData& tile, const Expectation& expected) {
  const int side = expected.config.tile_size;
  const auto plane = static_cast<std::size_t>(side) * static_cast<std::size_t>(side);
  const auto& bands = expected.bands;
  ASSERT_EQ(tile.channels, static_cast<int>(bands.size()));
  ASSERT_EQ(tile.height, side);
  ASSERT_EQ(tile.width, side);
  ASSERT_EQ(tile.pixels.size(), bands.size() * plane);
  ASSERT_TRUE(tile.valid.empty() || tile.valid.size() == plane);
  const auto& window = tile.tile.window;
  const auto raw = mgpr::test::gdal_read_window(expected.path, window, bands);
  const double scale = expected.config.scale != 0 ? expected.config.scale : default_scale(expected.spec.type);
  const auto window_plane = static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height);
  int invalid_pixels = 0;
  int partly_nodata_pixels = 0;  // nodata in some bands only: kept
  for (int y = 0; y < side; ++y) {
    for (int x = 0; x < side; ++x) {
      const auto at = static_cast<std::size_t>(y) * side + x;
      bool valid = x < window.width && y < window.height;
      const auto window_at = static_cast<std::size_t>(y) * window.width + x;
      bool nodata_in_every_band = expected.spec.nodata.has_value();
      for (std::size_t b = 0; valid && b < bands.size(); ++b) {
        const double value = raw[b * window_plane + window_at];
        if (std::isnan(value)) valid = false;
        if (!expected.spec.nodata || value != *expected.spec.nodata) nodata_in_every_band = false;
      }
      if (valid && nodata_in_every_band) valid = false;
      if (valid && expected.spec.nodata && bands.size() > 1) {
        for (std::size_t b = 0; b < bands.size(); ++b) {
          if (raw[b * window_plane + window_at] == *expected.spec.nodata) ++partly_nodata_pixels;
        }
      }
      if (!valid) ++invalid_pixels;
      const int mask = tile.valid.empty() ? 1 : tile.valid[at];
      ASSERT_EQ(mask, valid ? 1 : 0) << "mask at " << x << "," << y << " of the tile at " << window.x << "," << window.y
                                     << (tile.valid.empty() ? " (no mask: all valid)" : "");
      for (std::size_t b = 0; b < bands.size(); ++b) {
        double want = 0;
        if (valid) {
          want = (raw[b * window_plane + window_at] * scale - per_band(expected.config.mean, b, 0.0)) /
                 per_band(expected.config.std, b, 1.0);
        }
        const float got = tile.pixels[b * plane + at];
        ASSERT_NEAR(got, want, 2e-6 + 2e-7 * std::abs(want))
            << "channel " << b << " pixel " << x << "," << y << " of window " << window.x << "," << window.y;
      }
    }
  }
  if (expected.spec.nodata || expected.spec.with_nan) {
    EXPECT_GT(invalid_pixels, 0) << "the test lacks nodata";
  }
  if (expected.spec.nodata && bands.size() > 1 && window.width * window.height >= 1024) {
    EXPECT_GT(partly_nodata_pixels, 0) << "the test lacks pixels with nodata in some bands only";
  }
}

struct Case {
  std::string name;
  RasterSpec spec;
  std::vector<int> bands;  // config.bands
  std::vector<int> expected_bands;
  double scale = 0;
  std::vector<double> mean;
  std::vector<double> std;
  int tile_size = 64;
  int overlap = 0;
};

// ctest lists the case by name rather than as a byte dump.
void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

class RasterReaderMatchesGdal : public testing::TestWithParam<Case> {};

TEST_P(RasterReaderMatchesGdal, EveryTile) {
  const auto& c = GetParam();
  TempDir scratch;
  Expectation expected{c.spec, mgpr::test::write_raster(scratch.file(c.name + ".tif"), c.spec), {}, c.expected_bands};
  expected.config.rasters = {expected.path};
  expected.config.bands = c.bands;
  expected.config.scale = c.scale;
  expected.config.mean = c.mean;
  expected.config.std = c.std;
  expected.config.tile_size = c.tile_size;
  expected.config.overlap = c.overlap;

  const auto source = mgpr::runtime::make_tile_source(expected.config);
  ASSERT_EQ(source->rasters().size(), 1U);
  const auto& description = source->rasters().front();
  EXPECT_EQ(description.path, expected.path);
  EXPECT_EQ(description.width, c.spec.width);
  EXPECT_EQ(description.height, c.spec.height);
  EXPECT_EQ(description.band_count, c.spec.bands);
  EXPECT_EQ(description.data_type, GDALGetDataTypeName(c.spec.type));
  EXPECT_EQ(description.bands, c.expected_bands);
  EXPECT_EQ(description.nodata, c.spec.nodata);
  std::string missing;
  if (c.spec.nodata) {
    missing = c.expected_bands.size() == 1 ? fmt::format("nodata {}", *c.spec.nodata)
                                           : fmt::format("nodata {} in all bands", *c.spec.nodata);
  }
  if (c.spec.type == GDT_Float32 || c.spec.type == GDT_Float64) {
    missing = missing.empty() ? "NaN in any band" : missing + "; NaN in any band";
  }
  EXPECT_EQ(description.missing_pixels, missing.empty() ? "none" : missing);
  ASSERT_TRUE(description.geotransform.has_value());
  EXPECT_EQ(description.geotransform->terms(), (std::array<double, 6>{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1}));
  EXPECT_NE(description.crs_wkt.find("32633"), std::string::npos);
  EXPECT_EQ(source->channels(), static_cast<int>(c.expected_bands.size()));
  EXPECT_EQ(source->tile_size(), c.tile_size);

  const auto expected_tiles = mgpr::runtime::tile_image(0, c.spec.width, c.spec.height, c.tile_size, c.overlap);
  ASSERT_EQ(source->tiles().size(), expected_tiles.size());
  const auto reader = source->open_reader();
  TileData data;  // reused across tiles, as the reader pool does
  for (std::size_t i = 0; i < expected_tiles.size(); ++i) {
    const auto& tile = source->tiles()[i];
    ASSERT_EQ(tile.id, expected_tiles[i].id);
    ASSERT_EQ(tile.window, expected_tiles[i].window);
    reader->read(tile, data);
    EXPECT_EQ(data.tile.id, tile.id);
    EXPECT_GE(data.read_s, 0.0);
    expect_tile_matches_gdal(data, expected);
    if (HasFatalFailure()) return;
  }
}

RasterSpec spec(GDALDataType type, int bands, bool tiled, std::optional<double> nodata = std::nullopt) {
  RasterSpec s;
  s.type = type;
  s.bands = bands;
  s.tiled = tiled;
  s.nodata = nodata;
  s.block = tiled ? 32 : 7;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back({"byte_rgb_tiled_default_bands", spec(GDT_Byte, 3, true), {}, {1, 2, 3}, 0, {}, {}, 64, 8});
  auto four = spec(GDT_Byte, 4, false, 0.0);
  four.width = 130;
  four.height = 90;
  all.push_back({"byte_4_bands_striped_selection_nodata", four, {4, 2, 1}, {4, 2, 1}, 0, {}, {}, 48, 0});
  auto planar = spec(GDT_UInt16, 4, true, 65535.0);
  planar.band_interleaved = true;
  all.push_back({"uint16_band_interleaved_nodata_mean_std", planar, {2, 3}, {2, 3}, 0, {0.1, 0.2}, {0.5, 2.0}, 64, 16});
  all.push_back(
      {"int16_one_band_striped_nodata", spec(GDT_Int16, 1, false, -9999.0), {}, {1}, 0, {0.5}, {0.25}, 40, 0});
  auto floats = spec(GDT_Float32, 3, true, -9999.5);
  floats.with_nan = true;
  all.push_back({"float32_nan_nodata_scale", floats, {3, 1}, {3, 1}, 0.01, {1.5}, {}, 64, 4});
  auto small = spec(GDT_Byte, 3, true);
  small.width = 50;
  small.height = 30;
  all.push_back({"image_smaller_than_tile_is_padded", small, {}, {1, 2, 3}, 0, {}, {}, 64, 0});
  auto narrow = spec(GDT_UInt16, 1, false, 0.0);
  narrow.width = 300;
  narrow.height = 20;
  all.push_back({"narrow_image_padded_rows_nodata", narrow, {}, {1}, 0, {}, {}, 64, 0});
  all.push_back({"int32_through_float64", spec(GDT_Int32, 2, true, -1.0), {}, {1, 2}, 1e-9, {}, {}, 64, 0});
  all.push_back({"two_bands_default_selection", spec(GDT_Byte, 2, true), {}, {1, 2}, 0, {}, {}, 64, 0});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Rasters, RasterReaderMatchesGdal, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

TEST(RasterSource, SeveralRastersAreTiledInIdOrder) {
  TempDir scratch;
  RasterSpec first;
  first.width = 100;
  first.height = 70;
  RasterSpec second;
  second.width = 64;
  second.height = 128;
  second.seed = 2;
  SourceOptions config;
  config.tile_size = 64;
  config.rasters = {mgpr::test::write_raster(scratch.file("a.tif"), first),
                    mgpr::test::write_raster(scratch.file("b.tif"), second)};
  const auto source = mgpr::runtime::make_tile_source(config);
  ASSERT_EQ(source->rasters().size(), 2U);
  const auto& tiles = source->tiles();
  ASSERT_EQ(tiles.size(), 4U + 2U);
  for (std::size_t i = 1; i < tiles.size(); ++i) EXPECT_LT(tiles[i - 1].id, tiles[i].id);
  EXPECT_EQ(tiles[4].id, (TileId{1, 0, 0}));
  EXPECT_EQ(tiles[5].id, (TileId{1, 1, 0}));

  const auto reader = source->open_reader();
  TileData data;
  reader->read(tiles[5], data);
  expect_tile_matches_gdal(data, Expectation{second, config.rasters[1], config, {1, 2, 3}});
  reader->read(tiles[0], data);
  expect_tile_matches_gdal(data, Expectation{first, config.rasters[0], config, {1, 2, 3}});
}

TEST(RasterSource, ReaderPoolReadsTheSameTilesAsOneReader) {
  TempDir scratch;
  RasterSpec spec;
  spec.width = 300;
  spec.height = 260;
  spec.nodata = 7.0;
  SourceOptions config;
  config.tile_size = 64;
  config.overlap = 10;
  config.rasters = {mgpr::test::write_raster(scratch.file("pool.tif"), spec)};
  const auto source = mgpr::runtime::make_tile_source(config);
  std::map<TileId, TileData> single;
  const auto reader = source->open_reader();
  for (const auto& tile : source->tiles()) reader->read(tile, single[tile.id]);

  std::atomic<std::size_t> next{0};
  const auto& tiles = source->tiles();
  ReaderPool pool(
      *source, 3,
      [&]() -> std::optional<Tile> {
        const auto index = next++;
        return index < tiles.size() ? std::optional(tiles[index]) : std::nullopt;
      },
      2);
  std::size_t received = 0;
  while (auto data = pool.next()) {
    const auto& alone = single.at(data->tile.id);
    EXPECT_EQ(data->pixels, alone.pixels);
    EXPECT_EQ(data->valid, alone.valid);
    ++received;
    pool.recycle(std::move(*data));
  }
  EXPECT_EQ(received, tiles.size());
}

// A 16x16 Byte GeoTIFF of 2-unit pixels in `crs` (empty: none), written with `options`.
std::string write_georeferenced(const std::string& path, const std::string& crs,
                                const std::vector<std::string>& options = {}) {
  mgpr::runtime::initialise_gdal();
  std::vector<const char*> list;
  for (const auto& option : options) list.push_back(option.c_str());
  list.push_back(nullptr);
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  GDALDatasetUniquePtr dataset(driver->Create(path.c_str(), 16, 16, 1, GDT_Byte, const_cast<char**>(list.data())));
  std::array<double, 6> geotransform{500000.0, 2.0, 0.0, 4000000.0, 0.0, -2.0};
  dataset->SetGeoTransform(geotransform.data());
  if (!crs.empty()) {
    OGRSpatialReference srs;
    srs.SetFromUserInput(crs.c_str());
    dataset->SetSpatialRef(&srs);
  }
  return path;
}

// GDAL's own CRS of a raster, as WKT: what each raster's description must hold.
std::pair<std::string, double> gdal_crs(const std::string& path) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  const auto* srs = dataset->GetSpatialRef();
  if (srs == nullptr) return {"", 0.0};
  char* wkt = nullptr;
  srs->exportToWkt(&wkt);
  std::string text = wkt;
  CPLFree(wkt);
  return {text, srs->IsGeographic() ? 0.0 : srs->GetLinearUnits(nullptr)};
}

// Rasters with the same GeoTIFF keys share what is derived from their CRS; each must still
// get exactly GDAL's CRS, also where a sidecar overrides the keys or the bytes differ.
TEST(RasterSource, EachRasterGetsGdalsCrsWhenRastersShareTheirKeys) {
  TempDir scratch;
  const std::string utm = "EPSG:32633";
  std::vector<std::string> paths = {
      write_georeferenced(scratch.file("utm-a.tif"), utm),
      write_georeferenced(scratch.file("utm-b.tif"), utm),
      write_georeferenced(scratch.file("feet.tif"), "EPSG:2263"),
      write_georeferenced(scratch.file("utm-big-endian.tif"), utm, {"ENDIANNESS=BIG", "BIGTIFF=YES"}),
      write_georeferenced(scratch.file("none.tif"), ""),
      write_georeferenced(scratch.file("degrees.tif"), "EPSG:4326"),
      write_georeferenced(scratch.file("utm-pam.tif"), utm),
      write_georeferenced(scratch.file("utm-c.tif"), utm, {"TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"}),
  };
  {
    // Opened read-only, the CRS set goes to utm-pam.tif.aux.xml, which GDAL prefers to the
    // file's own keys (the same as utm-a.tif's).
    GDALDatasetUniquePtr pam(GDALDataset::Open(paths[6].c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    OGRSpatialReference other;
    other.SetFromUserInput("EPSG:32634");
    ASSERT_EQ(pam->SetSpatialRef(&other), CE_None);
  }
  ASSERT_NE(gdal_crs(paths[6]).first, gdal_crs(paths[0]).first);
  for (const int threads : {1, 3}) {
    SourceOptions config;
    config.tile_size = 16;
    config.open_threads = threads;
    config.rasters = paths;
    const auto source = mgpr::runtime::make_tile_source(config);
    ASSERT_EQ(source->rasters().size(), paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} on {} threads", paths[i], threads));
      const auto& raster = source->rasters()[i];
      const auto [wkt, metres_per_unit] = gdal_crs(paths[i]);
      EXPECT_EQ(raster.crs_wkt, wkt);
      EXPECT_DOUBLE_EQ(raster.resolution_m, 2.0 * metres_per_unit);  // 0: unknown (no CRS, or degrees)
    }
  }
}

TEST(RasterSource, SetsASmallGdalCacheUnlessTheUserChoseOne) {
  if (std::getenv("GDAL_CACHEMAX") != nullptr) GTEST_SKIP() << "GDAL_CACHEMAX is set in this environment";
  TempDir scratch;
  SourceOptions config;
  config.rasters = {mgpr::test::write_raster(scratch.file("cache.tif"), RasterSpec{})};
  (void)mgpr::runtime::make_tile_source(config);
  EXPECT_EQ(GDALGetCacheMax64(), mgpr::runtime::kDefaultGdalCacheBytes);
}

}  // namespace
