#pragma once
// A rank's tile loop as the run sees it: its share of the tiles (static or dynamic
// sharding) through the pipeline, with the run-wide progress line, the timeline of the
// rank's summary and the heartbeat the plugin's watchdog listens to.
#include <vector>

#include "app/run_plan.hpp"
#include "distributed/communicator.hpp"
#include "distributed/lease_book.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/summary.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/progress_printer.hpp"
#include "stream/handed_tiles.hpp"
#include "stream/returned_tiles.hpp"

namespace mgpr::runtime {

// What the loop runs: the prepared source, model and task output, and the ranks' store.
struct TileLoopParts {
  const TileSource& source;
  TileModel& model;
  BatchConsumer& output;
  Communicator& communicator;
  LeaseBook* book = nullptr;          // records the dynamic feed's leases (distributed/lease_book.hpp)
  ReturnedTiles* returned = nullptr;  // on_rank_loss=continue (stream/returned_tiles.hpp)
  HandedTiles* handed = nullptr;      // and on a rank but 0, what rank 0 hands it (stream/handed_tiles.hpp)
};

// Runs this rank's share of `todo` until the feed ends or a stop is asked for; records
// the figures in `summary` and returns the rasters this rank could not read (each also
// named on stderr). `printer` is the rank's progress line, made for `todo`.
RasterFailures run_tile_loop(const RunPlan& plan, const RankEnvironment& ranks, const TileLoopParts& parts,
                             const std::vector<Tile>& todo, ProgressPrinter& printer, RankSummary& summary);

}  // namespace mgpr::runtime
