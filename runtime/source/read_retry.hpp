#pragma once
// Remote rasters fail in ways GDAL does not retry: a connection reset or closed in the
// middle of an answer, a server restarted, a read cut short. A reader of remote rasters
// retries such a tile with exponential backoff, reopening the raster, and only then fails
// naming the URL. Local rasters are read as before: their failures are not transient.
#include <memory>
#include <span>

#include "source/raster_reader.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// How often and how patiently a failed read of a remote raster is tried again.
struct ReadRetryPolicy {
  int attempts = 6;            // in all, the first included
  double first_delay_s = 1.0;  // then doubled each time
  double max_delay_s = 30.0;
};

// GDAL's own retry settings, so one pair of knobs sets both: attempts = 1 +
// GDAL_HTTP_MAX_RETRY, first delay = GDAL_HTTP_RETRY_DELAY seconds (their defaults:
// gdal/remote_reads.hpp), the delay capped at 30 s.
ReadRetryPolicy read_retry_policy();

// `reader` itself when no plan is remote; otherwise a reader that retries a failed
// tile of a remote raster under `policy` (closing the raster's handle and forgetting
// GDAL's cached blocks of it before each new try), then throws std::runtime_error naming
// the URL, the tries and the last failure. The plans must outlive the reader.
std::unique_ptr<TileReader> with_read_retries(std::unique_ptr<RasterReader> reader,
                                              std::span<const RasterReadPlan> plans,
                                              const ReadRetryPolicy& policy = read_retry_policy());

}  // namespace mgpr::runtime
