#pragma once
// What a rank prints before its first tile: a line saying who it is and what it runs on,
// and on rank 0 the run's inputs (a line per raster while they can be read, a summary of
// thousands), warnings about their resolution, the tiles and the model; and what rank 0
// prints last when a run did not finish every tile.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "app/run_plan.hpp"
#include "mgpr/env_names.hpp"
#include "model/backend_info.hpp"
#include "model/model.hpp"
#include "resume/run_journal.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// What the prepare phase settled that the banner describes.
struct BannerFacts {
  const BackendInfo& backend;
  const TileSource& source;
  const TileModel& model;
};

void print_banner(const RankEnvironment& ranks, const RunPlan& plan, const BannerFacts& facts);

// Rank 0, before the rendezvous: the results of earlier runs the journal dropped (of
// rasters changed since, of tiles these inputs do not have), on stderr.
void print_dropped_results(const RunJournal::DoneTiles& done, std::span<const std::string> rasters,
                           const std::filesystem::path& journal_folder);

// How the run ended, for rank 0's last lines.
struct RunEnd {
  const TileSource& source;
  const RasterFailures& failed;
  std::size_t tiles_done = 0;
  bool stopped = false;
};

// Rank 0, after the usage summary: the rasters that could not be read and what to do about
// them, or that the run stopped with tiles left, and where the finished ones are kept.
void print_run_end(const RunEnd& end, const std::filesystem::path& journal_folder);

}  // namespace mgpr::runtime
