#pragma once
// The GDAL tile source. Only compiled when the build has GDAL (MGPR_HAVE_GDAL).
#include <ogr_spatialref.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "source/raster_reader.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// GDAL's block cache is shared by every reader thread. Aligned windows never reread a
// block, and a large cache was measured slower here, so a small one is the default.
inline constexpr std::int64_t kDefaultGdalCacheBytes = std::int64_t{64} << 20;

// Registers GDAL's drivers and, unless the user set GDAL_CACHEMAX (environment or
// --config), sets the block cache to kDefaultGdalCacheBytes. Idempotent, thread-safe.
void initialise_gdal();

// Opens and checks every raster of options.rasters and tiles them all, in id order.
// Selected bands: options.bands, else the first min(3, band count) bands. Throws
// UsageError naming the raster, what is wrong and the fix.
std::unique_ptr<TileSource> make_raster_source(const SourceOptions& options);

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
