#pragma once
// GeoTIFFs the raster tests write for themselves, and GDAL's own reads to compare with.
#include <gdal.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "geometry/tiler.hpp"
#include "support/temp_dir.hpp"

namespace mgpr::test {

struct RasterSpec {
  GDALDataType type = GDT_Byte;
  int width = 200;
  int height = 150;
  int bands = 3;
  bool tiled = true;
  int block = 64;  // tile side when tiled, rows per strip when striped
  bool band_interleaved = false;
  std::optional<double> nodata;  // also written into about 1 pixel in 16 of each band
  bool with_nan = false;         // about 1 pixel in 50 is NaN (floating-point types)
  unsigned seed = 1;
};

// Writes a georeferenced (EPSG:32633) GeoTIFF of pseudo-random values covering the
// type's range; returns its path.
std::string write_raster(const std::string& path, const RasterSpec& spec);

// GDAL's own read of `window` for `bands` (1-based) as Float64, band-sequential.
std::vector<double> gdal_read_window(const std::string& path, const runtime::PixelWindow& window,
                                     const std::vector<int>& bands);

}  // namespace mgpr::test
