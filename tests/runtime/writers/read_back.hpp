#pragma once
// Reading the output writers' files back with GDAL, the way a user's tools would.
#include <cpl_conv.h>
#include <gdal_priv.h>
#include <ogr_spatialref.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>
#include "support/error_of.hpp"

namespace mgpr::test {

inline std::string epsg_wkt(int code) {
  OGRSpatialReference srs;
  if (srs.importFromEPSG(code) != OGRERR_NONE) throw std::runtime_error("no EPSG:" + std::to_string(code));
  char* wkt = nullptr;
  srs.exportToWkt(&wkt);
  std::string text = wkt;
  CPLFree(wkt);
  return text;
}

inline OGRSpatialReference srs_from_wkt(const std::string& wkt) {
  OGRSpatialReference srs;
  srs.importFromWkt(wkt.c_str());
  return srs;
}

// Sorted names in `folder`, hidden ones included: temporary files must not be left.
inline std::vector<std::string> names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

inline GDALDatasetUniquePtr open_dataset(const std::filesystem::path& path, unsigned flags = GDAL_OF_RASTER) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), flags | GDAL_OF_READONLY));
  if (!dataset) throw std::runtime_error("GDAL cannot open " + path.string());
  return dataset;
}

// Every pixel of `band` as T, row-major.
template <typename T>
std::vector<T> read_band(GDALRasterBand& band, GDALDataType type) {
  std::vector<T> values(static_cast<std::size_t>(band.GetXSize()) * static_cast<std::size_t>(band.GetYSize()));
  if (band.RasterIO(GF_Read, 0, 0, band.GetXSize(), band.GetYSize(), values.data(), band.GetXSize(), band.GetYSize(),
                    type, 0, 0, nullptr) != CE_None) {
    throw std::runtime_error("GDAL cannot read a band");
  }
  return values;
}

// What `write` throws as std::runtime_error, or "no error".
template <typename Write>
std::string runtime_error_of(Write&& write) {
  return error_of<std::runtime_error>(std::forward<Write>(write));
}

}  // namespace mgpr::test
