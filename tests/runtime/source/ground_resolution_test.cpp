// Rasters read at the model's ground resolution: the grid arithmetic from a
// raster's geotransform and CRS (metres whatever the CRS's unit, degrees refused, notes
// for what is read as it is), and the reads themselves: every tile of the model grid as
// GDAL resamples the whole raster, the last column past an odd edge, and masks.
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <ogr_spatialref.h>

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "geometry/georef.hpp"
#include "mgpr/error.hpp"
#include "source/raster_source.hpp"
#include "source/tile_source.hpp"
#include "support/rasters.hpp"

namespace {

using mgpr::runtime::GeoTransform;
using mgpr::runtime::GroundResolution;
using mgpr::runtime::plan_ground_resolution;
using mgpr::runtime::RasterDescription;
using mgpr::runtime::SourceOptions;
using mgpr::runtime::TileData;
using mgpr::test::TempDir;

OGRSpatialReference crs(int epsg) {
  OGRSpatialReference srs;
  EXPECT_EQ(srs.importFromEPSG(epsg), OGRERR_NONE) << epsg;
  srs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);  // as a dataset's CRS: x east, y north
  return srs;
}

RasterDescription described(int width, int height, std::optional<std::array<double, 6>> terms) {
  RasterDescription description;
  description.path = "ortho.tif";
  description.width = width;
  description.height = height;
  if (terms) description.geotransform = GeoTransform(*terms);
  return description;
}

GroundResolution model(double gsd, bool resample = true, const std::string& method = "auto") {
  GroundResolution resolution;
  resolution.model_gsd = gsd;
  resolution.resample = resample;
  resolution.method = method;
  return resolution;
}

constexpr double kUsFoot = 1200.0 / 3937.0;  // EPSG:2263's unit in metres

TEST(GroundResolution, FeetAreCountedInMetres) {
  const auto feet = crs(2263);
  // 0.1 m pixels written in US survey feet.
  auto description = described(1000, 500, std::array{980000.0, 0.1 / kUsFoot, 0.0, 200000.0, 0.0, -0.1 / kUsFoot});
  const auto read = plan_ground_resolution(model(0.2), &feet, description);
  EXPECT_NEAR(description.resolution_m, 0.1, 1e-9);
  ASSERT_TRUE(read.has_value());
  EXPECT_NEAR(read->x_ratio, 2.0, 1e-9);
  EXPECT_NEAR(read->y_ratio, 2.0, 1e-9);
  EXPECT_EQ(read->data, GRIORA_Average);
  EXPECT_EQ(read->native_width, 1000);
  EXPECT_EQ(description.width, 500);
  EXPECT_EQ(description.height, 250);
  const auto& terms = description.geotransform->terms();
  EXPECT_DOUBLE_EQ(terms[0], 980000.0);  // same origin
  EXPECT_DOUBLE_EQ(terms[3], 200000.0);
  EXPECT_NEAR(terms[1], 0.2 / kUsFoot, 1e-9);  // the model's 0.2 m, in feet
  EXPECT_NEAR(terms[5], -0.2 / kUsFoot, 1e-9);
  ASSERT_TRUE(description.native_grid.has_value());
  EXPECT_EQ(description.native_grid->width, 1000);
  EXPECT_EQ(description.native_grid->height, 500);
  EXPECT_NEAR(description.native_grid->geotransform.terms()[1], 0.1 / kUsFoot, 1e-12);
  EXPECT_EQ(description.resolution_note, "0.1 m, read at the model's 0.2 m (average)");
  EXPECT_FALSE(description.resolution_warning);

  // One-foot pixels are 0.3048 m: within 10% of a 0.3 m model, not 1 m.
  auto one_foot = described(100, 100, std::array{980000.0, 1.0, 0.0, 200000.0, 0.0, -1.0});
  EXPECT_FALSE(plan_ground_resolution(model(0.3), &feet, one_foot).has_value());
  EXPECT_NEAR(one_foot.resolution_m, kUsFoot, 1e-12);
  EXPECT_EQ(one_foot.width, 100);
  EXPECT_FALSE(one_foot.native_grid.has_value());
}

TEST(GroundResolution, WithinTheToleranceIsReadAsItIs) {
  const auto utm = crs(32618);
  auto description = described(400, 300, std::array{500000.0, 0.105, 0.0, 4500000.0, 0.0, -0.105});
  EXPECT_FALSE(plan_ground_resolution(model(0.1), &utm, description).has_value());
  EXPECT_EQ(description.width, 400);
  EXPECT_DOUBLE_EQ(description.geotransform->terms()[1], 0.105);
  EXPECT_FALSE(description.native_grid.has_value());
  EXPECT_EQ(description.resolution_note, "0.105 m, within 10% of the model's 0.1 m");
  EXPECT_FALSE(description.resolution_warning);

  auto exact = described(400, 300, std::array{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1});
  EXPECT_FALSE(plan_ground_resolution(model(0.1), &utm, exact).has_value());
  EXPECT_EQ(exact.resolution_note, "0.1 m");
}

TEST(GroundResolution, ResampleFalseReadsAsItIsWithAWarning) {
  const auto utm = crs(32618);
  auto description = described(400, 300, std::array{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1});
  EXPECT_FALSE(plan_ground_resolution(model(0.2, false), &utm, description).has_value());
  EXPECT_EQ(description.width, 400);
  EXPECT_FALSE(description.native_grid.has_value());
  EXPECT_TRUE(description.resolution_warning);
  EXPECT_EQ(description.resolution_note,
            "0.1 m, read as it is (resample=false) although the model's gsd is 0.2 m: objects are 2x as many "
            "pixels across as the model expects");
}

TEST(GroundResolution, AnUnknownModelGsdIsSaid) {
  const auto utm = crs(32618);
  auto description = described(400, 300, std::array{500000.0, 0.03, 0.0, 4500000.0, 0.0, -0.03});
  EXPECT_FALSE(plan_ground_resolution(model(0), &utm, description).has_value());
  EXPECT_EQ(description.resolution_note, "0.03 m; the model's gsd is unknown (set gsd= or use a model card)");
  EXPECT_DOUBLE_EQ(description.resolution_m, 0.03);
  EXPECT_FALSE(description.resolution_warning);
}

TEST(GroundResolution, DegreesAreRefusedWithTheFix) {
  const auto wgs84 = crs(4326);
  const std::array terms{-75.5, 1e-6, 0.0, 40.0, 0.0, -1e-6};  // near Philadelphia: UTM zone 18N
  auto description = described(1000, 1000, terms);
  try {
    (void)plan_ground_resolution(model(0.2), &wgs84, description);
    FAIL() << "a raster in degrees was resampled";
  } catch (const mgpr::UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("raster 'ortho.tif'"), std::string::npos) << message;
    EXPECT_NE(message.find("CRS in degrees"), std::string::npos) << message;
    EXPECT_NE(message.find("gdalwarp -t_srs EPSG:32618 -tr 0.2 0.2"), std::string::npos) << message;
    EXPECT_NE(message.find("resample=false"), std::string::npos) << message;
  }
  // Read as it is when asked, and when the model's gsd is unknown.
  auto as_is = described(1000, 1000, terms);
  EXPECT_FALSE(plan_ground_resolution(model(0.2, false), &wgs84, as_is).has_value());
  EXPECT_TRUE(as_is.resolution_warning);
  EXPECT_EQ(as_is.resolution_m, 0);
  EXPECT_NE(as_is.resolution_note.find("degrees"), std::string::npos) << as_is.resolution_note;
  auto unknown = described(1000, 1000, terms);
  EXPECT_FALSE(plan_ground_resolution(model(0), &wgs84, unknown).has_value());
  EXPECT_FALSE(unknown.resolution_warning);
}

TEST(GroundResolution, NoGeoreferencingIsReadAsItIs) {
  const auto utm = crs(32618);
  auto description = described(400, 300, std::nullopt);
  EXPECT_FALSE(plan_ground_resolution(model(0.2), nullptr, description).has_value());
  EXPECT_EQ(description.width, 400);
  EXPECT_TRUE(description.resolution_warning);
  EXPECT_EQ(description.resolution_note,
            "unknown (no georeferencing): read as it is, not compared with the model's 0.2 m");

  auto no_crs = described(400, 300, std::array{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1});
  EXPECT_FALSE(plan_ground_resolution(model(0.2), nullptr, no_crs).has_value());
  EXPECT_NE(no_crs.resolution_note.find("no CRS"), std::string::npos);
}

TEST(GroundResolution, RefiningPicksBilinearAndSizesRound) {
  const auto utm = crs(32618);
  auto coarse = described(101, 3, std::array{500000.0, 0.5, 0.0, 4500000.0, 0.0, -0.5});
  const auto read = plan_ground_resolution(model(0.2), &utm, coarse);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->data, GRIORA_Bilinear);
  EXPECT_EQ(coarse.width, 253);  // 101 * 0.5 / 0.2 = 252.5, rounded half away from zero
  EXPECT_EQ(coarse.height, 8);   // 7.5
  EXPECT_EQ(coarse.resolution_note, "0.5 m, read at the model's 0.2 m (bilinear)");

  auto named = described(10, 10, std::array{500000.0, 0.5, 0.0, 4500000.0, 0.0, -0.5});
  EXPECT_EQ(plan_ground_resolution(model(0.2, true, "cubic"), &utm, named)->data, GRIORA_Cubic);

  auto tiny = described(1, 1, std::array{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1});
  ASSERT_TRUE(plan_ground_resolution(model(10), &utm, tiny).has_value());
  EXPECT_EQ(tiny.width, 1);  // at least one pixel
  EXPECT_EQ(tiny.height, 1);
}

TEST(GroundResolution, ARotatedRasterKeepsItsDirections) {
  const auto utm = crs(32618);
  const double c = 0.1 * std::cos(0.5);
  const double s = 0.1 * std::sin(0.5);
  auto description = described(200, 100, std::array{500000.0, c, s, 4500000.0, s, -c});
  ASSERT_TRUE(plan_ground_resolution(model(0.2), &utm, description).has_value());
  EXPECT_NEAR(description.resolution_m, 0.1, 1e-12);
  const auto& terms = description.geotransform->terms();
  EXPECT_NEAR(terms[1], 2 * c, 1e-12);
  EXPECT_NEAR(terms[2], 2 * s, 1e-12);
  EXPECT_NEAR(terms[4], 2 * s, 1e-12);
  EXPECT_NEAR(terms[5], -2 * c, 1e-12);
  // The far corner lies where the raster's does.
  const auto model_corner = description.geotransform->to_map(100, 50);
  const auto own_corner = description.native_grid->geotransform.to_map(200, 100);
  EXPECT_NEAR(model_corner.x, own_corner.x, 1e-9);
  EXPECT_NEAR(model_corner.y, own_corner.y, 1e-9);
}

// GDAL's read of the whole raster `path` (bands 1..bands) at `out_width` x `out_height`
// with `algorithm`: band-sequential Float64.
std::vector<double> gdal_resampled(const std::string& path, int bands, int out_width, int out_height,
                                   GDALRIOResampleAlg algorithm) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  EXPECT_TRUE(dataset);
  std::vector<double> values(static_cast<std::size_t>(out_width) * out_height * bands);
  GDALRasterIOExtraArg extra;
  INIT_RASTERIO_EXTRA_ARG(extra);
  extra.eResampleAlg = algorithm;
  EXPECT_EQ(dataset->RasterIO(GF_Read, 0, 0, dataset->GetRasterXSize(), dataset->GetRasterYSize(), values.data(),
                              out_width, out_height, GDT_Float64, bands, nullptr, 0, 0, 0, &extra),
            CE_None);
  return values;
}

// Every pixel of every tile the source reads (tile_size 32, overlap 6) against `whole`,
// GDAL's resampled read of the raster, compare_width x compare_height model pixels from
// the top-left, scaled by 1/255; pixels past them are not compared.
void expect_tiles_match(const std::string& path, const std::vector<double>& whole, int model_width, int model_height,
                        int compare_width, int compare_height) {
  SourceOptions options;
  options.rasters = {path};
  options.tile_size = 32;
  options.overlap = 6;
  options.resolution = model(0.2);
  const auto source = mgpr::runtime::make_tile_source(options);
  const auto& raster = source->rasters().front();
  ASSERT_EQ(raster.width, model_width);
  ASSERT_EQ(raster.height, model_height);
  ASSERT_TRUE(raster.native_grid.has_value());
  const auto reader = source->open_reader();
  TileData tile;
  const auto plane = static_cast<std::size_t>(compare_width) * static_cast<std::size_t>(compare_height);
  int compared = 0;
  for (const auto& each : source->tiles()) {
    reader->read(each, tile);
    const auto& window = each.window;
    for (int b = 0; b < 3; ++b) {
      for (int y = 0; y < window.height; ++y) {
        for (int x = 0; x < window.width; ++x) {
          const int column = window.x + x;
          const int row = window.y + y;
          if (column >= compare_width || row >= compare_height) continue;
          const double expected = whole[b * plane + static_cast<std::size_t>(row) * compare_width + column] / 255.0;
          const float got = tile.pixels[(static_cast<std::size_t>(b) * 32 + y) * 32 + x];
          ASSERT_NEAR(got, expected, 1e-6) << "band " << b + 1 << " model pixel " << column << "," << row;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 3 * compare_width * compare_height - 1);
}

TEST(GroundResolutionRead, EveryTileIsGdalsResamplingOfTheWholeRaster) {
  GDALAllRegister();
  const TempDir dir;
  mgpr::test::RasterSpec spec;  // 0.1 m pixels, EPSG:32633
  spec.width = 200;
  spec.height = 150;
  const auto path = mgpr::test::write_raster((dir.path() / "even.tif").string(), spec);
  const auto whole = gdal_resampled(path, 3, 100, 75, GRIORA_Average);
  expect_tiles_match(path, whole, 100, 75, 100, 75);
}

TEST(GroundResolutionRead, AnOddEdgeReadsThePartInside) {
  GDALAllRegister();
  const TempDir dir;
  mgpr::test::RasterSpec spec;
  spec.width = 201;  // 100.5 model pixels: 101, the last half outside
  spec.height = 151;
  const auto path = mgpr::test::write_raster((dir.path() / "odd.tif").string(), spec);
  // The first 200 x 150 pixels resampled alone give the first 100 x 75 model pixels.
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  std::vector<double> whole(100 * 75 * 3);
  GDALRasterIOExtraArg extra;
  INIT_RASTERIO_EXTRA_ARG(extra);
  extra.eResampleAlg = GRIORA_Average;
  ASSERT_EQ(dataset->RasterIO(GF_Read, 0, 0, 200, 150, whole.data(), 100, 75, GDT_Float64, 3, nullptr, 0, 0, 0, &extra),
            CE_None);
  expect_tiles_match(path, whole, 101, 76, 100, 75);

  // The last column is the mean of the raster's last column, pair by pair of rows.
  SourceOptions options;
  options.rasters = {path};
  options.tile_size = 128;
  options.resolution = model(0.2);
  const auto source = mgpr::runtime::make_tile_source(options);
  TileData tile;
  source->open_reader()->read(source->tiles().front(), tile);
  std::vector<double> edge(2);
  ASSERT_EQ(dataset->GetRasterBand(1)->RasterIO(GF_Read, 200, 10, 1, 2, edge.data(), 1, 2, GDT_Float64, 0, 0), CE_None);
  EXPECT_NEAR(tile.pixels[5 * 128 + 100], std::round((edge[0] + edge[1]) / 2) / 255.0, 1.0 / 255 + 1e-6);
}

TEST(GroundResolutionRead, AModelPixelIsMissingWhenEveryPixelItCoversIs) {
  GDALAllRegister();
  const TempDir dir;
  mgpr::test::PixelRaster pixels;
  pixels.width = 8;
  pixels.height = 2;
  // Model pixel 0 covers masked pixels only, 1 valid ones only, 2 and 3 one valid pixel.
  pixels.mask = {0, 0, 1, 1, 0, 0, 1, 0,  //
                 0, 0, 1, 1, 0, 1, 0, 0};
  pixels.bands = {{10, 10, 100, 100, 10, 10, 50, 10,  //
                   10, 10, 100, 100, 10, 200, 10, 10}};
  const auto path = mgpr::test::write_pixels((dir.path() / "masked.tif").string(), pixels);
  SourceOptions options;
  options.rasters = {path};
  options.tile_size = 4;
  options.resolution = model(0.2);  // write_pixels' pixels are 0.1 m
  const auto source = mgpr::runtime::make_tile_source(options);
  ASSERT_EQ(source->rasters().front().width, 4);
  ASSERT_EQ(source->rasters().front().height, 1);
  TileData tile;
  source->open_reader()->read(source->tiles().front(), tile);
  ASSERT_EQ(tile.valid.size(), 16U);
  EXPECT_EQ(tile.valid[0], 0);
  EXPECT_EQ(tile.valid[1], 1);
  EXPECT_EQ(tile.valid[2], 1);
  EXPECT_EQ(tile.valid[3], 1);
  EXPECT_FLOAT_EQ(tile.pixels[0], 0.0F);
  // A kept pixel holds its valid pixels' value: the masked ones are left out of the mean.
  EXPECT_NEAR(tile.pixels[1], 100.0 / 255, 1e-6);
  EXPECT_NEAR(tile.pixels[2], 200.0 / 255, 1e-6);
  EXPECT_NEAR(tile.pixels[3], 50.0 / 255, 1e-6);
}

TEST(GroundResolutionRead, UnderNodataAModelPixelIsMissingWhenEveryPixelItCoversIsNodata) {
  GDALAllRegister();
  const TempDir dir;
  mgpr::test::PixelRaster pixels;
  pixels.width = 4;
  pixels.height = 2;
  // Model pixel 0 covers nodata (0 in every band) only; model pixel 1 one pixel of data.
  pixels.bands = {{0, 0, 0, 0, 0, 0, 30, 0}, {0, 0, 0, 0, 0, 0, 40, 0}, {0, 0, 0, 0, 0, 0, 50, 0}};
  pixels.nodata = {0.0, 0.0, 0.0};
  const auto path = mgpr::test::write_pixels((dir.path() / "nodata.tif").string(), pixels);
  SourceOptions options;
  options.rasters = {path};
  options.tile_size = 2;
  options.resolution = model(0.2);
  const auto source = mgpr::runtime::make_tile_source(options);
  ASSERT_EQ(source->rasters().front().width, 2);
  TileData tile;
  source->open_reader()->read(source->tiles().front(), tile);
  ASSERT_EQ(tile.valid.size(), 4U);
  EXPECT_EQ(tile.valid[0], 0);
  EXPECT_EQ(tile.valid[1], 1);
  // The nodata pixels are left out of the mean: the one pixel of data's value.
  EXPECT_NEAR(tile.pixels[1], 30.0 / 255, 1e-6);
  EXPECT_NEAR(tile.pixels[4 + 1], 40.0 / 255, 1e-6);
  EXPECT_NEAR(tile.pixels[8 + 1], 50.0 / 255, 1e-6);
}

}  // namespace
