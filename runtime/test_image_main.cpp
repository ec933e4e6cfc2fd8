// mgpr-test-image: writes a georeferenced GeoTIFF for demos, tests and benchmarks, so
// nothing has to be downloaded.
#include <CLI/CLI.hpp>
#include <cpl_conv.h>
#include <fmt/format.h>
#include <gdal_priv.h>
#include <ogr_spatialref.h>

#include <array>
#include <cstdint>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "mgpr/version.hpp"

namespace {

struct ImageRequest {
  std::string output;
  int size = 4096;
  int bands = 3;
  int block = 256;
  int epsg = 32633;
  double pixel_size = 0.1;  // metres: drone orthomosaic resolution
};

// A smooth pattern with texture, deterministic so runs are comparable.
std::uint8_t pixel_value(int band, int row, int column) {
  const auto hash = static_cast<std::uint32_t>(row * 73856093) ^ static_cast<std::uint32_t>(column * 19349663) ^
                    static_cast<std::uint32_t>(band * 83492791);
  const int base = (row / 4 + column / 4 + band * 40) % 200;
  return static_cast<std::uint8_t>(base + static_cast<int>(hash % 48U));
}

void write_image(const ImageRequest& request) {
  GDALAllRegister();
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  if (driver == nullptr) throw mgpr::UsageError("GDAL has no GTiff driver; install gdal-bin/libgdal");
  const std::string block = std::to_string(request.block);
  CPLStringList creation;
  creation.AddNameValue("TILED", "YES");
  creation.AddNameValue("BLOCKXSIZE", block.c_str());
  creation.AddNameValue("BLOCKYSIZE", block.c_str());
  creation.AddNameValue("INTERLEAVE", "PIXEL");

  const std::string temporary = request.output + ".partial.tif";
  GDALDatasetUniquePtr dataset(driver->Create(temporary.c_str(), request.size, request.size, request.bands,
                                              GDT_Byte, creation.List()));
  if (!dataset) {
    throw mgpr::UsageError(fmt::format("cannot create '{}': {}; check that its folder exists and is writable",
                                       request.output, CPLGetLastErrorMsg()));
  }
  const std::array<double, 6> geotransform{500000.0, request.pixel_size, 0.0, 4500000.0, 0.0, -request.pixel_size};
  dataset->SetGeoTransform(const_cast<double*>(geotransform.data()));
  OGRSpatialReference srs;
  srs.importFromEPSG(request.epsg);
  dataset->SetSpatialRef(&srs);

  std::vector<std::uint8_t> row_buffer(static_cast<std::size_t>(request.size));
  for (int band = 1; band <= request.bands; ++band) {
    auto* raster_band = dataset->GetRasterBand(band);
    for (int row = 0; row < request.size; ++row) {
      for (int column = 0; column < request.size; ++column) row_buffer[column] = pixel_value(band, row, column);
      if (raster_band->RasterIO(GF_Write, 0, row, request.size, 1, row_buffer.data(), request.size, 1, GDT_Byte, 0,
                                0) != CE_None) {
        throw mgpr::UsageError(fmt::format("writing '{}' failed: {}", request.output, CPLGetLastErrorMsg()));
      }
    }
  }
  dataset.reset();  // flush and close before the rename makes it look complete
  if (std::rename(temporary.c_str(), request.output.c_str()) != 0) {
    throw mgpr::UsageError(fmt::format("cannot rename '{}' to '{}'", temporary, request.output));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ImageRequest request;
  std::vector<std::string> overrides;
  CLI::App app{"Write a georeferenced test GeoTIFF (uint8, tiled, EPSG:32633, 0.1 m pixels)."};
  app.set_version_flag("--version", std::string("mgpr-test-image ") + mgpr::kVersion);
  app.add_option("output", request.output, "GeoTIFF to write")->required();
  app.add_option("--size", request.size, "side in pixels (same as image_size=N)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--bands", request.bands, "number of bands")->check(CLI::Range(1, 64));
  app.add_option("--block", request.block, "GeoTIFF block side in pixels (multiple of 16)")
      ->check(CLI::Range(16, 4096));
  app.add_option("--epsg", request.epsg, "EPSG code of the CRS");
  app.add_option("overrides", overrides, "key=value, as for mgpr (image_size)");
  CLI11_PARSE(app, argc, argv);
  try {
    mgpr::RunConfig config;
    config.image_size = request.size;
    for (const auto& assignment : overrides) mgpr::apply_override(config, assignment);
    request.size = config.image_size;
    if (request.block % 16 != 0) throw mgpr::UsageError("--block must be a multiple of 16 (GeoTIFF tiles)");
    write_image(request);
    fmt::print("mgpr-test-image: wrote {} ({}x{} pixels, {} bands)\n", request.output, request.size, request.size,
               request.bands);
    return 0;
  } catch (const mgpr::UsageError& error) {
    fmt::print(stderr, "mgpr-test-image: error: {}\n", error.what());
    return 2;
  }
}
