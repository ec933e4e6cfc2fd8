#pragma once
// A raster's ground resolution against the model's (gsd=, the model card's): read as it
// is, or on the model's grid over the same footprint, resampled by GDAL on read. Only
// compiled when the build has GDAL.
#include <ogr_spatialref.h>

#include <optional>

#include "source/raster_reader.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// Compares the raster's pixel size in metres (its geotransform's, times the linear unit
// of `crs`, nullptr when it has none) with resolution.model_gsd, and says what is done in
// description.resolution_m, resolution_note and resolution_warning. When the raster is to
// be read at the model's gsd, its own grid moves to description.native_grid, the model's
// grid over the same footprint takes its place (width, height, geotransform), and how to
// read it is returned. Arithmetic only: no pixel is read. Throws UsageError for a raster
// in degrees that is to be resampled, and for a model grid too large to count.
std::optional<ResampledRead> plan_ground_resolution(const GroundResolution& resolution, const OGRSpatialReference* crs,
                                                    RasterDescription& description);

// What plan_ground_resolution needs of a CRS: whether it is in degrees and, when not,
// metres per CRS unit. Kept apart from the CRS so that rasters sharing one need not
// build it again.
struct CrsUnits {
  bool geographic = false;
  double metres_per_unit = 1.0;  // unused when geographic
};

// The CRS's units, or nullopt when crs is nullptr.
std::optional<CrsUnits> crs_units(const OGRSpatialReference* crs);

// plan_ground_resolution with the CRS's units given (nullopt: no CRS).
std::optional<ResampledRead> plan_ground_resolution(const GroundResolution& resolution,
                                                    const std::optional<CrsUnits>& crs, RasterDescription& description);

}  // namespace mgpr::runtime
