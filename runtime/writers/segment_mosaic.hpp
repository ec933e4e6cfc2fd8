#pragma once
// task=segment output: each rank writes the pieces of the tiles it processed (one small
// GeoTIFF per tile core, see segment_layout.hpp); rank 0 then ties all pieces into one
// VRT with the input's size, georeferencing and CRS, and on request copies it into a
// Cloud-Optimized GeoTIFF. Every file is written under a temporary name and renamed.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "geometry/georef.hpp"
#include "geometry/tiler.hpp"
#include "writers/gdal_write.hpp"

namespace mgpr::runtime {

struct RasterGeoreference {
  GeoTransform transform;  // of the whole input raster
  std::string crs_wkt;     // empty: none
};

// Class value written where a pixel has no class (outside every piece); the VRT's nodata.
inline constexpr std::uint8_t kNoClass = 255;

// A single-band uint8 GeoTIFF of `core` (image pixels; `classes` row-major, core.width *
// core.height values), georeferenced at the core's place in the whole raster.
void write_class_piece(const std::filesystem::path& file, const PixelWindow& core,
                       std::span<const std::uint8_t> classes, const RasterGeoreference& georef);
// The same for a float32 probability band (the winning class's softmax probability).
void write_probability_piece(const std::filesystem::path& file, const PixelWindow& core,
                             std::span<const float> probabilities, const RasterGeoreference& georef);

struct MosaicPiece {
  std::filesystem::path file;  // a piece written by write_*_piece
  PixelWindow core;            // where it goes in the whole raster
};

// Writes `vrt` (width x height, one band of the pieces' type, nodata kNoClass for
// classes) with paths relative to the VRT's folder, so the output folder can be moved.
// Works for rotated geotransforms (no gdalbuildvrt, which refuses them).
void write_mosaic_vrt(const std::filesystem::path& vrt, std::span<const MosaicPiece> pieces, int width, int height,
                      const RasterGeoreference& georef, bool probabilities);

// Copies the VRT into a Cloud-Optimized GeoTIFF (GDAL's COG driver, deflate). The copy
// of a large mosaic takes minutes, so `stop_requested` is asked as it goes (GDAL's
// progress callback): once it says yes the copy ends, its partial file is removed and
// StoppedOnRequest is thrown, so a walltime stop also stops a long write.
void write_cog(const std::filesystem::path& vrt, const std::filesystem::path& cog,
               const output::StopRequested& stop_requested = {});

}  // namespace mgpr::runtime
