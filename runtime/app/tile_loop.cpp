#include "app/tile_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "app/output_stream.hpp"
#include "app/rank_summary.hpp"
#include "distributed/heartbeat.hpp"
#include "distributed/sharding.hpp"
#include "mgpr/input_list.hpp"
#include "resume/stop_request.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long rank 0's writer may write nothing while a rank waits for it (paced_by_writer).
constexpr auto kWriterSilence = std::chrono::seconds(10);

// The store's counter of tiles every rank has done, for rank 0's progress line.
constexpr const char* kRunProgressKey = "mgpr/tiles-done";

// Stops handing out tiles once a stop was asked for; tiles already claimed finish. A run
// that lost a rank cannot finish: the feed throws why, and the pipeline ends with it.
TileFeed stoppable(TileFeed feed, Communicator& communicator) {
  return [inner = std::move(feed), &communicator]() -> std::optional<Tile> {
    communicator.check_peers();
    if (stop_signal() != 0) return std::nullopt;
    return inner();
  };
}

// A tile is not started while it lies further than this many tiles (in the run's order)
// beyond the first one whose results rank 0 has not written: a writer slower than the
// ranks then slows them, rather than letting results pile up unwritten, and what is left
// after the last tile is at most this many tiles' writing. Never fewer than two rows of
// the widest raster, so that the tiles that complete the row rank 0 waits for are never
// held back (with either sharding those lie within one row of it), nor than four
// batches of every rank, so that the ranks' queues stay full while the writer keeps up.
std::int64_t unwritten_limit(std::span<const Tile> tiles, const RunPlan& plan, int world_size) {
  std::int64_t widest = 0;
  std::int64_t row = 0;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    row = i > 0 && tiles[i].id.image == tiles[i - 1].id.image && tiles[i].id.row == tiles[i - 1].id.row ? row + 1 : 1;
    widest = std::max(widest, row);
  }
  const auto batches = std::int64_t{4} * world_size * plan.in_flight.batch_size;
  return std::max({kUnwrittenTiles, 2 * widest, batches});
}

// What the reader threads of a rank share of rank 0's writer: the last count learnt (it
// only grows, so the store is not asked while it allows the tile), and whether the rank
// stopped waiting for it.
struct WriterPace {
  std::atomic<std::int64_t> written{0};
  std::atomic<bool> released{false};
};

// Waits before handing out a tile too far ahead of rank 0's writer (output_stream.hpp).
// A writer that writes nothing for kWriterSilence while this rank waits (a long COG; a
// raster failed part way does not hold it: it hears of it at once) releases the rank for
// the rest of the run, said once: it never waits for ever, it only holds more.
TileFeed paced_by_writer(TileFeed feed, std::span<const Tile> run_tiles, Communicator& communicator,
                         std::int64_t limit) {
  auto pace = std::make_shared<WriterPace>();
  return [inner = std::move(feed), run_tiles, &communicator, limit, pace]() -> std::optional<Tile> {
    auto tile = inner();
    if (!tile || pace->released) return tile;
    const auto at = std::lower_bound(run_tiles.begin(), run_tiles.end(), tile->id,
                                     [](const Tile& candidate, const TileId& id) { return candidate.id < id; });
    const auto position = static_cast<std::int64_t>(at - run_tiles.begin());
    auto last_change = std::chrono::steady_clock::now();
    while (position - pace->written > limit && stop_signal() == 0 && !pace->released) {
      // A writer held up by a rank the run lost would write nothing more: the loss ends the wait.
      communicator.check_peers();
      const auto written = communicator.add(kTilesWrittenKey, 0);
      const auto now = std::chrono::steady_clock::now();
      if (written > pace->written.exchange(written)) last_change = now;
      if (position - written <= limit) break;
      if (now - last_change > kWriterSilence) {
        if (!pace->released.exchange(true)) {
          fmt::print(stderr,
                     "mgpr: rank {}: rank 0 has written no results for {} s; this rank goes on without waiting for "
                     "its writer (its results wait on rank 0 until written)\n",
                     communicator.rank(), std::chrono::duration_cast<std::chrono::seconds>(kWriterSilence).count());
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return tile;
  };
}

}  // namespace

RasterFailures run_tile_loop(const RunPlan& plan, const RankEnvironment& ranks, const TileLoopParts& parts,
                             const std::vector<Tile>& todo, ProgressPrinter& printer, RankSummary& summary) {
  auto feed = plan.sharding == Sharding::kStatic ? make_static_feed(todo, ranks.rank, ranks.world_size)
                                                 : make_dynamic_feed(todo, parts.communicator, "mgpr/next-tile");
  auto heartbeat = Heartbeat::from_environment();
  TimelineRecorder timeline(summary.timeline);
  summary.started_unix_s = unix_now();
  timeline.record({0, 0, 0});
  // Every rank adds its tiles to one counter on the store, so rank 0's line shows the
  // whole run's progress: at most twice a second, not per batch (a GPU does dozens).
  std::int64_t counted = 0;
  std::int64_t run_done = 0;
  auto last_count = Clock::time_point{};
  const auto on_batch = [&](const PipelineStats& running) {
    if (const auto now = Clock::now(); now - last_count >= std::chrono::milliseconds(500)) {
      run_done = parts.communicator.add(kRunProgressKey, running.tiles - counted);
      counted = running.tiles;
      last_count = now;
    }
    printer.update(running, run_done);
    timeline.record({running.elapsed_s, running.tiles, running.data_wait_s});
    heartbeat.progress();
    parts.communicator.check_peers();
  };
  auto [stats, own_failures] = run_pipeline(
      {parts.source, plan.in_flight.workers,
       stoppable(paced_by_writer(std::move(feed), parts.source.tiles(), parts.communicator,
                                 unwritten_limit(parts.source.tiles(), plan, ranks.world_size)),
                 parts.communicator),
       plan.in_flight.reader_queue()},
      parts.model, plan.device, parts.output, {plan.in_flight.batch_size, on_batch, parts.source.raw_scaling()});
  // A stop (the launcher's SIGTERM once a peer died) may have ended the loop before the
  // loss could: a run that lost a rank is not "done".
  parts.communicator.check_peers();
  timeline.close({stats.elapsed_s, stats.tiles, stats.data_wait_s});
  printer.finish(stats);
  fill_from_stats(summary, stats);
  for (const auto& [image, reason] : own_failures) {
    const auto& raster = parts.source.rasters().at(static_cast<std::size_t>(image));
    summary.failed_rasters.push_back({redact_input(raster.path), reason});
    fmt::print(stderr, "mgpr: rank {}: raster {} could not be read; its other tiles are skipped: {}\n", ranks.rank,
               redact_input(raster.path), reason);
  }
  heartbeat.finished();  // from here it waits for its peers, and rank 0 then writes
  return std::move(own_failures);
}

}  // namespace mgpr::runtime
