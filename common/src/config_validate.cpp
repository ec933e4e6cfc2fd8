// Checks that involve several keys, or limits beyond a key's own type and range.
#include <fmt/format.h>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/tile_limits.hpp"

namespace mgpr {

void validate(const RunConfig& config) {
  check_tiling(config.tile_size, config.overlap);
  (void)parse_nodata(config.nodata);  // throws, naming the value, before any work
  for (const double divisor : config.std) {
    if (divisor <= 0) {
      throw UsageError(fmt::format("std values divide the pixels and must be positive, got {}", divisor));
    }
  }
  if (config.iou_threshold <= 0 || config.iou_threshold > 1) {
    throw UsageError(
        fmt::format("iou_threshold={} must be in (0, 1]; 0.5 is usual, lower merges more", config.iou_threshold));
  }
  if (config.min_area < 0 || config.simplify < 0) {
    throw UsageError(fmt::format("min_area={} and simplify={} must not be negative; 0 keeps every polygon as it is",
                                 config.min_area, config.simplify));
  }
  if (config.polygons && config.task != name_of(Task::kSegment)) {
    throw UsageError(fmt::format(
        "polygons=true makes polygons of a segmentation's classes, and this run has task={}; use task=segment "
        "with a segmentation model, or leave polygons out",
        config.task));
  }
  if (!config.classify_model.empty() && config.task != name_of(Task::kDetect)) {
    throw UsageError(fmt::format(
        "classify_model={} classifies the crops of detected boxes, and this run has task={}; use task=detect "
        "with a detector, or leave classify_model out",
        config.classify_model, config.task));
  }
  // A lost rank's tiles are found again from its leases, which static sharding has none of.
  if (parse_on_rank_loss(config.on_rank_loss) == OnRankLoss::kContinue &&
      parse_sharding(config.sharding) == Sharding::kStatic) {
    throw UsageError(
        "on_rank_loss=continue needs sharding=dynamic: a lost rank's tiles are found again from the leases it "
        "claimed, and static sharding claims none; use sharding=dynamic (the default), or on_rank_loss=fail");
  }
  if (config.gsd_tolerance >= 1) {
    throw UsageError(fmt::format(
        "gsd_tolerance={} must be below 1: it is the relative difference between a raster's resolution and gsd "
        "read without resampling (0.1: within 10 %)",
        config.gsd_tolerance));
  }
  // Caught here, not when the results are written after every tile was computed.
  if (config.output_dir.empty()) {
    throw UsageError(
        "output_dir is empty; give the folder for the results, or leave the key out for the default "
        "(mgpr_output)");
  }
  if (config.use_fake_data && config.task != name_of(Task::kClassify)) {
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
