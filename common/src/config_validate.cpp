// Checks that involve several keys, or limits beyond a key's own type and range.
#include <fmt/format.h>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"

namespace mgpr {

void validate_tiling(const RunConfig& config) {
  if (config.tile_size < 1) {
    throw UsageError(fmt::format("tile_size={} must be at least 1; the usual is 512 or 1024", config.tile_size));
  }
  if (config.overlap < 0 || config.overlap >= config.tile_size) {
    throw UsageError(fmt::format("overlap ({}) must be smaller than tile_size ({}); lower overlap or raise tile_size",
                                 config.overlap, config.tile_size));
  }
}

void validate(const RunConfig& config) {
  validate_tiling(config);
  // A float tile of 16384 px a side is 1 GiB per band; beyond that a batch cannot fit
  // a GPU, and the value is almost certainly a typo.
  constexpr int kLargestTile = 16384;
  if (config.tile_size > kLargestTile) {
    throw UsageError(
        fmt::format("tile_size={} is too large: one tile would need {:.0f} GiB per band as float; use "
                    "at most {} (typical: 512 to 2048)",
                    config.tile_size, 4.0 * config.tile_size * config.tile_size / (1 << 30), kLargestTile));
  }
  for (const double divisor : config.std) {
    if (divisor <= 0) {
      throw UsageError(fmt::format("std values divide the pixels and must be positive, got {}", divisor));
    }
  }
  if (config.iou_threshold <= 0 || config.iou_threshold > 1) {
    throw UsageError(
        fmt::format("iou_threshold={} must be in (0, 1]; 0.5 is usual, lower merges more", config.iou_threshold));
  }
  // Caught here, not when the results are written after every tile was computed.
  if (config.output_dir.empty()) {
    throw UsageError(
        "output_dir is empty; give the folder for the results, or leave the key out for the default "
        "(mgpr_output)");
  }
  if (config.use_fake_data && config.task != "classify") {
    throw UsageError(
        fmt::format("task={} needs a georeferenced raster; fake data (use_fake_data=true) serves "
                    "task=classify only",
                    config.task));
  }
  if (config.image_path.empty() && !config.use_fake_data) {
    throw UsageError(
        "no raster given: pass RASTER paths (or image_path=...), or use_fake_data=true for a "
        "fake-data environment check");
  }
}

}  // namespace mgpr
