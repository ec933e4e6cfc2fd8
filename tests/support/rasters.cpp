#include "support/rasters.hpp"

#include <cpl_conv.h>
#include <gdal_priv.h>
#include <ogr_spatialref.h>

#include <algorithm>
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

// The pixels that are nodata in every band at once: one draw for the whole raster.
std::vector<bool> nodata_in_all_bands(const RasterSpec& spec) {
  std::vector<bool> all(static_cast<std::size_t>(spec.width) * static_cast<std::size_t>(spec.height));
  if (!spec.nodata) return all;
  std::mt19937 random(spec.seed * 7919U);
  std::uniform_int_distribution<int> one_in(0, 31);
  for (auto&& pixel : all) pixel = one_in(random) == 0;
  return all;
}

std::vector<double> band_values(const RasterSpec& spec, int band, const std::vector<bool>& nodata_everywhere) {
  std::mt19937 random(spec.seed * 1000U + static_cast<unsigned>(band));
  const auto [low, high] = value_range(spec.type);
  const bool integral = GDALDataTypeIsInteger(spec.type) != 0;
  std::uniform_real_distribution<double> uniform(low, high);
  std::uniform_int_distribution<int> one_in(0, 799);
  std::vector<double> values(static_cast<std::size_t>(spec.width) * static_cast<std::size_t>(spec.height));
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto& value = values[i];
    const int pick = one_in(random);
    if (spec.nodata && (pick < 50 || nodata_everywhere[i])) {
      value = *spec.nodata;
    } else if (spec.with_nan && pick >= 50 && pick < 66) {
      value = std::numeric_limits<double>::quiet_NaN();
    } else {
      value = integral ? std::round(uniform(random)) : static_cast<double>(static_cast<float>(uniform(random)));
    }
  }
  return values;
}

void georeference(GDALDataset& dataset) {
  std::array<double, 6> geotransform{500000.0, 0.1, 0.0, 4500000.0, 0.0, -0.1};
  dataset.SetGeoTransform(geotransform.data());
  OGRSpatialReference srs;
  srs.importFromEPSG(32633);
  dataset.SetSpatialRef(&srs);
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
  georeference(*dataset);
  const auto nodata_everywhere = nodata_in_all_bands(spec);
  for (int band = 1; band <= spec.bands; ++band) {
    auto* raster_band = dataset->GetRasterBand(band);
    if (spec.nodata) raster_band->SetNoDataValue(*spec.nodata);
    auto values = band_values(spec, band, nodata_everywhere);
    if (raster_band->RasterIO(GF_Write, 0, 0, spec.width, spec.height, values.data(), spec.width, spec.height,
                              GDT_Float64, 0, 0, nullptr) != CE_None) {
      throw std::runtime_error("cannot write test raster " + path);
    }
  }
  return path;
}

std::string write_pixels(const std::string& path, const PixelRaster& raster) {
  GDALAllRegister();
  const auto plane = static_cast<std::size_t>(raster.width) * static_cast<std::size_t>(raster.height);
  const int band_count = static_cast<int>(raster.bands.size());
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  CPLStringList options;
  if (raster.alpha_band != 0 && raster.alpha_band == band_count) options.AddNameValue("ALPHA", "YES");
  GDALDatasetUniquePtr dataset(
      driver->Create(path.c_str(), raster.width, raster.height, band_count, raster.type, options.List()));
  if (!dataset) throw std::runtime_error("cannot create test raster " + path);
  georeference(*dataset);
  // A GeoTIFF holds one nodata value for all its bands.
  const bool one_nodata =
      raster.nodata.empty() || std::all_of(raster.nodata.begin(), raster.nodata.end(),
                                           [&](const auto& value) { return value == raster.nodata.front(); });
  for (int band = 1; band <= band_count; ++band) {
    auto* raster_band = dataset->GetRasterBand(band);
    auto values = raster.bands[static_cast<std::size_t>(band - 1)];
    if (values.size() != plane) throw std::invalid_argument("test raster band of the wrong size");
    if (one_nodata && !raster.nodata.empty() && raster.nodata[static_cast<std::size_t>(band - 1)]) {
      raster_band->SetNoDataValue(*raster.nodata[static_cast<std::size_t>(band - 1)]);
    }
    if (band == raster.alpha_band) raster_band->SetColorInterpretation(GCI_AlphaBand);
    if (raster_band->RasterIO(GF_Write, 0, 0, raster.width, raster.height, values.data(), raster.width, raster.height,
                              GDT_Float64, 0, 0, nullptr) != CE_None) {
      throw std::runtime_error("cannot write test raster " + path);
    }
  }
  if (!raster.mask.empty()) {
    if (raster.mask.size() != plane) throw std::invalid_argument("test raster mask of the wrong size");
    CPLSetThreadLocalConfigOption("GDAL_TIFF_INTERNAL_MASK", raster.mask_file ? "NO" : "YES");
    const bool created = dataset->CreateMaskBand(GMF_PER_DATASET) == CE_None;
    CPLSetThreadLocalConfigOption("GDAL_TIFF_INTERNAL_MASK", nullptr);
    auto mask = raster.mask;
    if (!created || dataset->GetRasterBand(1)->GetMaskBand()->RasterIO(GF_Write, 0, 0, raster.width, raster.height,
                                                                       mask.data(), raster.width, raster.height,
                                                                       GDT_Byte, 0, 0, nullptr) != CE_None) {
      throw std::runtime_error("cannot write the mask of test raster " + path);
    }
  }
  if (one_nodata) return path;
  const auto vrt_path = path + ".vrt";
  GDALDatasetUniquePtr vrt(GetGDALDriverManager()->GetDriverByName("VRT")->CreateCopy(
      vrt_path.c_str(), dataset.get(), FALSE, nullptr, nullptr, nullptr));
  if (!vrt) throw std::runtime_error("cannot write test raster " + vrt_path);
  for (int band = 1; band <= band_count; ++band) {
    const auto& nodata = raster.nodata[static_cast<std::size_t>(band - 1)];
    if (nodata) vrt->GetRasterBand(band)->SetNoDataValue(*nodata);
  }
  return vrt_path;
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
