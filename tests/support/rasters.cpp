#include "support/rasters.hpp"

#include <gdal_priv.h>
#include <ogr_spatialref.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <system_error>

namespace mgpr::test {

namespace {

std::pair<double, double> value_range(GDALDataType type) {
  switch (type) {
    case GDT_Byte:
      return {0, 255};
    case GDT_UInt16:
      return {0, 65535};
    case GDT_Int16:
      return {-32768, 32767};
    case GDT_Int32:
      return {-2'000'000'000, 2'000'000'000};
    default:
      return {-1000, 1000};
  }
}

std::vector<double> band_values(const RasterSpec& spec, int band) {
  std::mt19937 random(spec.seed * 1000U + static_cast<unsigned>(band));
  const auto [low, high] = value_range(spec.type);
  const bool integral = GDALDataTypeIsInteger(spec.type) != 0;
  std::uniform_real_distribution<double> uniform(low, high);
  std::uniform_int_distribution<int> one_in(0, 799);
  std::vector<double> values(static_cast<std::size_t>(spec.width) * static_cast<std::size_t>(spec.height));
  for (auto& value : values) {
    const int pick = one_in(random);
    if (spec.nodata && pick < 50) {
      value = *spec.nodata;
    } else if (spec.with_nan && pick >= 50 && pick < 66) {
      value = std::numeric_limits<double>::quiet_NaN();
    } else {
      value = integral ? std::round(uniform(random)) : static_cast<double>(static_cast<float>(uniform(random)));
    }
  }
  return values;
}

}  // namespace

std::string write_raster(const std::string& path, const RasterSpec& spec) {
  GDALAllRegister();
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  const std::string block = std::to_string(spec.block);
  CPLStringList options;
  options.AddNameValue("INTERLEAVE", spec.band_interleaved ? "BAND" : "PIXEL");
  if (spec.tiled) {
    options.AddNameValue("TILED", "YES");
    options.AddNameValue("BLOCKXSIZE", block.c_str());
    options.AddNameValue("BLOCKYSIZE", block.c_str());
  } else {
    options.AddNameValue("BLOCKYSIZE", block.c_str());
  }
  GDALDatasetUniquePtr dataset(
      driver->Create(path.c_str(), spec.width, spec.height, spec.bands, spec.type, options.List()));
  if (!dataset) throw std::runtime_error("cannot create test raster " + path);
  std::array<double, 6> geotransform{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1};
  dataset->SetGeoTransform(geotransform.data());
  OGRSpatialReference srs;
  srs.importFromEPSG(32633);
  dataset->SetSpatialRef(&srs);
  for (int band = 1; band <= spec.bands; ++band) {
    auto* raster_band = dataset->GetRasterBand(band);
    if (spec.nodata) raster_band->SetNoDataValue(*spec.nodata);
    auto values = band_values(spec, band);
    if (raster_band->RasterIO(GF_Write, 0, 0, spec.width, spec.height, values.data(), spec.width, spec.height,
                              GDT_Float64, 0, 0, nullptr) != CE_None) {
      throw std::runtime_error("cannot write test raster " + path);
    }
  }
  return path;
}

std::vector<double> gdal_read_window(const std::string& path, const runtime::PixelWindow& window,
                                     const std::vector<int>& bands) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  if (!dataset) throw std::runtime_error("GDAL cannot reopen " + path);
  std::vector<double> values(static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height) *
                             bands.size());
  auto band_map = bands;
  if (dataset->RasterIO(GF_Read, window.x, window.y, window.width, window.height, values.data(), window.width,
                        window.height, GDT_Float64, static_cast<int>(band_map.size()), band_map.data(), 0, 0, 0,
                        nullptr) != CE_None) {
    throw std::runtime_error("GDAL cannot read " + path);
  }
  return values;
}

}  // namespace mgpr::test
