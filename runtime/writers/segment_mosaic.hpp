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
// `class_names` (index = class value), given for classes: the band's category names and
// a raster attribute table (columns `value`, `class_name`), which GDAL and QGIS show.
void write_mosaic_vrt(const std::filesystem::path& vrt, std::span<const MosaicPiece> pieces, int width, int height,
                      const RasterGeoreference& georef, bool probabilities,
                      std::span<const std::string> class_names = {});

// A raster's pixel grid: its size and georeferencing.
struct MosaicGrid {
  int width = 0;
  int height = 0;
  GeoTransform transform;
};

// Writes `vrt`: the mosaic `source` (a VRT on the grid `from`, written by
// write_mosaic_vrt) on the grid `to`, by nearest neighbour, so a class stays a class and
// a probability stays the one of the class kept. `from` must be `to` with other pixel
// sizes (the same directions; a raster read at the model's resolution is), else
// std::invalid_argument. `source` is named relative to the VRT's folder, as the pieces
// are. `class_names` as for write_mosaic_vrt.
void write_resampled_vrt(const std::filesystem::path& vrt, const std::filesystem::path& source, const MosaicGrid& from,
                         const MosaicGrid& to, const std::string& crs_wkt, bool probabilities,
                         std::span<const std::string> class_names = {});

// Copies the VRT into a Cloud-Optimized GeoTIFF (GDAL's COG driver, deflate), with the
// mosaic's category names and attribute table (in `<cog>.aux.xml`, which GeoTIFF needs
// for them; written before the COG gets its name). The copy
// of a large mosaic takes minutes, so `stop_requested` is asked as it goes (GDAL's
// progress callback): once it says yes the copy ends, its partial file is removed and
// StoppedOnRequest is thrown, so a walltime stop also stops a long write.
void write_cog(const std::filesystem::path& vrt, const std::filesystem::path& cog,
               const output::StopRequested& stop_requested = {});

}  // namespace mgpr::runtime
