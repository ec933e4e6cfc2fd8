// mgpr-test-image: writes a georeferenced GeoTIFF for demos, tests and benchmarks, so
// nothing has to be downloaded. Bright squares (--square) give detect and segment runs
// objects whose places are known exactly (--objects-csv).
#include <cpl_conv.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gdal_priv.h>
#include <ogr_spatialref.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "geometry/georef.hpp"
#include "mgpr/cli.hpp"
#include "mgpr/config.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/text.hpp"
#include "mgpr/version.hpp"
#include "writers/gdal_write.hpp"

namespace {

// The background never reaches the squares' value, with room for a threshold of 0.99
// on value/255 (252.45) between them.
constexpr int kBaseLevels = 200;
constexpr int kTextureLevels = 48;
constexpr int kBackgroundMax = kBaseLevels - 1 + kTextureLevels - 1;
constexpr std::uint8_t kSquareValue = 255;
static_assert(kBackgroundMax == 246 && kBackgroundMax < 0.99 * 255.0);

// A square clipped to the image: pixel-corner coordinates, x2 and y2 exclusive.
struct Box {
  int x1 = 0;
  int y1 = 0;
  int x2 = 0;
  int y2 = 0;
  std::uint8_t last_band = kSquareValue;  // the last band's value: a second colour below 255
};

struct ImageRequest {
  std::string output;
  int size = 4096;
  int width = 0;   // 0: --size
  int height = 0;  // 0: --size
  int bands = 3;
  int block = 256;
  int epsg = 32633;
  double pixel_size = 0.1;  // metres: drone orthomosaic resolution
  double rotation_degrees = 0;
  std::vector<Box> squares;
  std::string objects_csv;
};

// A smooth pattern with texture, deterministic so runs are comparable.
std::uint8_t pixel_value(int band, int row, int column) {
  // Unsigned, so the products wrap by definition: the same pixels the overflowing int
  // products gave before, without the undefined behaviour.
  const auto hash = static_cast<std::uint32_t>(row) * 73856093U ^ static_cast<std::uint32_t>(column) * 19349663U ^
                    static_cast<std::uint32_t>(band) * 83492791U;
  const int base = (row / 4 + column / 4 + band * 40) % kBaseLevels;
  return static_cast<std::uint8_t>(base + static_cast<int>(hash % static_cast<std::uint32_t>(kTextureLevels)));
}

// Rotated counterclockwise about the top-left corner: at 0 degrees this is the usual
// north-up {x0, p, 0, y0, 0, -p}, exactly.
std::array<double, 6> geotransform(const ImageRequest& request) {
  const double radians = request.rotation_degrees * std::numbers::pi / 180.0;
  const double p = request.pixel_size;
  const double c = std::cos(radians);
  const double s = std::sin(radians);
  return {500000.0, p * c, p * s, 4500000.0, p * s, -p * c};
}

int parse_int(const std::string& text, const std::string& option) {
  const auto value = mgpr::parse_number<int>(text);
  if (!value) throw mgpr::UsageError(fmt::format("{}: '{}' is not an integer", option, text));
  return *value;
}

Box parse_square(const std::string& text, int width, int height) {
  const auto parts = mgpr::split_list(text, ',', mgpr::EmptyItems::kKeep);
  const std::string option = fmt::format("--square {}", text);
  if (parts.size() != 3 && parts.size() != 4) {
    throw mgpr::UsageError(option +
                           ": give X,Y,SIZE (column, row of the top-left corner, side) or X,Y,SIZE,LAST (LAST: the "
                           "last band's value, 0 to 255)");
  }
  const long long x = parse_int(parts[0], option);
  const long long y = parse_int(parts[1], option);
  const long long side = parse_int(parts[2], option);
  if (side < 1) throw mgpr::UsageError(option + ": SIZE must be at least 1");
  const long long last = parts.size() == 4 ? parse_int(parts[3], option) : kSquareValue;
  if (last < 0 || last > 255) throw mgpr::UsageError(option + ": LAST must be 0 to 255");
  const Box box{static_cast<int>(std::max(x, 0LL)), static_cast<int>(std::max(y, 0LL)),
                static_cast<int>(std::min(x + side, static_cast<long long>(width))),
                static_cast<int>(std::min(y + side, static_cast<long long>(height))), static_cast<std::uint8_t>(last)};
  if (box.x1 >= box.x2 || box.y1 >= box.y2) {
    throw mgpr::UsageError(fmt::format("{}: the square lies entirely outside the {}x{} image", option, width, height));
  }
  return box;
}

void write_raster(const ImageRequest& request, const std::filesystem::path& path) {
  GDALAllRegister();
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  if (driver == nullptr) throw mgpr::UsageError("GDAL has no GTiff driver; install gdal-bin/libgdal");
  const std::string block = std::to_string(request.block);
  CPLStringList creation;
  creation.AddNameValue("TILED", "YES");
  creation.AddNameValue("BLOCKXSIZE", block.c_str());
  creation.AddNameValue("BLOCKYSIZE", block.c_str());
  creation.AddNameValue("INTERLEAVE", "PIXEL");

  GDALDatasetUniquePtr dataset(
      driver->Create(path.c_str(), request.width, request.height, request.bands, GDT_Byte, creation.List()));
  if (!dataset) {
    throw mgpr::UsageError(fmt::format("cannot create '{}': {}; check that its folder exists and is writable",
                                       request.output, CPLGetLastErrorMsg()));
  }
  auto transform = geotransform(request);
  dataset->SetGeoTransform(transform.data());
  OGRSpatialReference srs;
  srs.importFromEPSG(request.epsg);
  dataset->SetSpatialRef(&srs);

  std::vector<std::uint8_t> row_buffer(static_cast<std::size_t>(request.width));
  for (int band = 1; band <= request.bands; ++band) {
    auto* raster_band = dataset->GetRasterBand(band);
    for (int row = 0; row < request.height; ++row) {
      for (int column = 0; column < request.width; ++column) row_buffer[column] = pixel_value(band, row, column);
      for (const auto& square : request.squares) {
        if (row >= square.y1 && row < square.y2) {
          std::fill(row_buffer.begin() + square.x1, row_buffer.begin() + square.x2,
                    band == request.bands ? square.last_band : kSquareValue);
        }
      }
      if (raster_band->RasterIO(GF_Write, 0, row, request.width, 1, row_buffer.data(), request.width, 1, GDT_Byte, 0,
                                0) != CE_None) {
        throw mgpr::IoError(fmt::format("writing '{}' failed: {}", request.output, CPLGetLastErrorMsg()));
      }
    }
  }
  CPLErrorReset();
  dataset.reset();  // flush and close before the rename makes it look complete
  if (CPLGetLastErrorType() == CE_Failure) {
    throw mgpr::IoError(fmt::format("writing '{}' failed: {}", request.output, CPLGetLastErrorMsg()));
  }
}

// fmt's "{}" is the shortest text that reads back as the same double, so tests can
// compare map corners exactly.
void write_objects_csv(const ImageRequest& request, const std::filesystem::path& path) {
  std::ofstream out(path);
  if (!out) {
    throw mgpr::UsageError(fmt::format("cannot create '{}'; check that its folder exists", request.objects_csv));
  }
  const mgpr::runtime::GeoTransform transform(geotransform(request));
  out << "id,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2\n";
  int id = 1;
  for (const auto& b : request.squares) {
    const auto corner1 = transform.to_map(b.x1, b.y1);
    const auto corner2 = transform.to_map(b.x2, b.y2);
    out << fmt::format("{},{},{},{},{},{},{},{},{}\n", id++, b.x1, b.y1, b.x2, b.y2, corner1.x, corner1.y, corner2.x,
                       corner2.y);
  }
  out.close();
  if (!out) throw mgpr::IoError(fmt::format("writing '{}' failed", request.objects_csv));
}

void write_outputs(const ImageRequest& request) {
  mgpr::runtime::output::PartialFile image(request.output);
  write_raster(request, image.path());
  if (request.objects_csv.empty()) {
    image.commit();
    return;
  }
  mgpr::runtime::output::PartialFile objects(request.objects_csv);
  write_objects_csv(request, objects.path());
  image.commit();
  objects.commit();
}

constexpr const char* kFooter = R"(
Squares: every --square paints 255 in every band; the background pattern stays at or
below 246, so a threshold of 0.99 on value/255 separates them exactly. X,Y,SIZE,LAST
paints LAST in the last band instead: a second colour (with three bands, LAST 248 or
more keeps the bands' mean above that threshold). A square may extend past the image
edge and is clipped; one entirely outside is an error.

--objects-csv writes one row per square, in the order given, with columns
  id,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2
id counts from 1; x1,y1,x2,y2 are pixel-corner coordinates after clipping, x2 and y2
exclusive (a square at 0,0 of side 4 is 0,0,4,4); map_* are the corners (x1,y1) and
(x2,y2) through the geotransform: map_x = gt0 + x*gt1 + y*gt2, map_y = gt3 + x*gt4 + y*gt5.

--rotation D turns the image counterclockwise by D degrees about its top-left corner
(500000, 4500000): gt = {500000, p*cos D, p*sin D, 4500000, p*sin D, -p*cos D}, p = 0.1 m.
Both files are written under a .partial name and renamed when complete.)";

}  // namespace

int main(int argc, char** argv) {
  ImageRequest request;
  std::vector<std::string> squares;
  CLI::App app{"Write a georeferenced test GeoTIFF (uint8, tiled, EPSG:32633, 0.1 m pixels)."};
  app.set_version_flag("--version", std::string("mgpr-test-image ") + mgpr::kVersion);
  std::string config_file;
  std::vector<std::string> arguments;
  app.add_option("arguments", arguments,
                 "the GeoTIFF to write, and key=value as for mgpr (image_path=, image_size=), in any order");
  app.add_option("--config", config_file, "TOML run configuration, as for mgpr (default: $MGPR_CONFIG)");
  auto* size_option =
      app.add_option("--size", request.size, "side in pixels (same as image_size=N); the default for width and height")
          ->check(CLI::Range(1, 1 << 20));
  app.add_option("--width", request.width, "width in pixels (default: --size)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--height", request.height, "height in pixels (default: --size)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--bands", request.bands, "number of bands")->check(CLI::Range(1, 64));
  app.add_option("--block", request.block, "GeoTIFF block side in pixels (multiple of 16)")
      ->check(CLI::Range(16, 4096));
  app.add_option("--epsg", request.epsg, "EPSG code of the CRS");
  app.add_option("--rotation", request.rotation_degrees, "degrees counterclockwise the image turns (default 0)")
      ->check(CLI::Range(-360.0, 360.0));
  // One value per --square, or CLI11 would take the output path as another square.
  app.add_option("--square", squares, "X,Y,SIZE[,LAST]: a bright square (255; LAST in the last band); repeat for more")
      ->type_name("X,Y,SIZE")
      ->allow_extra_args(false);
  app.add_option("--objects-csv", request.objects_csv, "CSV of the squares' clipped pixel and map corners");
  app.footer(kFooter);
  if (const auto code = mgpr::parse_command_line(app, argc, argv)) return *code;
  try {
    // The same keys, file and environment as mgpr, so multigpu_raster's
    // `mgpr-test-image image_path=test.tif image_size=2048` and a shared config file work.
    if (config_file.empty()) {
      if (const char* from_env = std::getenv(mgpr::env::kConfig)) config_file = from_env;
    }
    const auto config = mgpr::resolve_config(config_file, arguments);
    if (config.image_path.size() != 1) {
      throw mgpr::UsageError(fmt::format(
          "give one GeoTIFF to write (as an argument or image_path=...), got {}: {}", config.image_path.size(),
          config.image_path.empty() ? std::string("none") : fmt::format("{}", fmt::join(config.image_path, ", "))));
    }
    request.output = config.image_path.front();
    if (size_option->count() == 0) request.size = config.image_size;
    if (request.width == 0) request.width = request.size;
    if (request.height == 0) request.height = request.size;
    if (!std::isfinite(request.rotation_degrees)) throw mgpr::UsageError("--rotation must be a number of degrees");
    if (request.block % 16 != 0) throw mgpr::UsageError("--block must be a multiple of 16 (GeoTIFF tiles)");
    for (const auto& square : squares) request.squares.push_back(parse_square(square, request.width, request.height));
    write_outputs(request);
    fmt::print("mgpr-test-image: wrote {} ({}x{} pixels, {} bands, {} squares)\n", request.output, request.width,
               request.height, request.bands, request.squares.size());
    return 0;
  } catch (const mgpr::UsageError& error) {
    fmt::print(stderr, "mgpr-test-image: error: {}\n", error.what());
    return mgpr::kExitUsage;
  } catch (const std::exception& error) {  // a full disk (IoError), a failed rename from PartialFile
    fmt::print(stderr, "mgpr-test-image: failed: {}\n", error.what());
    return mgpr::kExitFailure;
  }
}
