#pragma once
// GeoTIFFs the raster tests write for themselves, and GDAL's own reads to compare with.
#include <gdal.h>

#include <cstdint>
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
  // Declared on every band; written into about 1 pixel in 16 of each band on its own
  // (data: another band has a value) and into about 1 pixel in 32 of every band at once
  // (missing).
  std::optional<double> nodata;
  bool with_nan = false;  // about 1 pixel in 50 is NaN (floating-point types)
  unsigned seed = 1;
};

// Writes a georeferenced (EPSG:32633) GeoTIFF of pseudo-random values covering the
// type's range; returns its path.
std::string write_raster(const std::string& path, const RasterSpec& spec);

// A small raster of chosen pixels, for tests of what is missing and what is fed.
struct PixelRaster {
  GDALDataType type = GDT_Byte;
  int width = 4;
  int height = 2;
  std::vector<std::vector<double>> bands;     // one row-major width x height plane per band
  std::vector<std::optional<double>> nodata;  // per band; empty: no band has one
  int alpha_band = 0;                         // 1-based band marked alpha (GCI_AlphaBand); 0: none
  std::vector<std::uint8_t> mask;             // per-dataset mask (0 missing); empty: none
  bool mask_file = false;                     // the mask in a .msk file beside the raster, not inside it
};

// Writes `raster` as a georeferenced (EPSG:32633) GeoTIFF, an internal mask written with
// GDAL_TIFF_INTERNAL_MASK=YES and CreateMaskBand(GMF_PER_DATASET); returns its path. A
// GeoTIFF holds one nodata value for all bands: when the bands' differ, the path returned
// is that of a VRT beside it (path + ".vrt") that declares each band's.
std::string write_pixels(const std::string& path, const PixelRaster& raster);

// GDAL's own read of `window` for `bands` (1-based) as Float64, band-sequential.
std::vector<double> gdal_read_window(const std::string& path, const runtime::PixelWindow& window,
                                     const std::vector<int>& bands);

}  // namespace mgpr::test
