#pragma once
// What a rank prints before its first tile: a line saying who it is and what it runs on,
// and on rank 0 the run's inputs (source/raster_report.hpp), the tiles and the model.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "app/run_plan.hpp"
#include "mgpr/env_names.hpp"
#include "model/backend_info.hpp"
#include "model/model.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// What the prepare phase settled that the banner describes.
struct BannerFacts {
  const BackendInfo& backend;
  const TileSource& source;
  const TileModel& model;
};

void print_banner(const RankEnvironment& ranks, const RunPlan& plan, const BannerFacts& facts);

}  // namespace mgpr::runtime
