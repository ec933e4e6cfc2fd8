#pragma once
// The GDAL tile source. Only compiled when the build has GDAL (MGPR_HAVE_GDAL).
#include <cstdint>
#include <memory>
#include <optional>

#include "source/ground_resolution.hpp"
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

}  // namespace mgpr::runtime
