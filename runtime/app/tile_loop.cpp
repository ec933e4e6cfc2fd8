#include "app/tile_loop.hpp"

#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "distributed/heartbeat.hpp"
#include "distributed/sharding.hpp"
#include "mgpr/input_list.hpp"
#include "mgpr/store_keys.hpp"
#include "pipeline/rank_summary.hpp"
#include "resume/stop_request.hpp"
#include "stream/writer_layout.hpp"
#include "stream/writer_pace.hpp"

namespace mgpr::runtime {

RasterFailures run_tile_loop(const RunPlan& plan, const RankEnvironment& ranks, const TileLoopParts& parts,
                             const std::vector<Tile>& todo, ProgressPrinter& printer, RankSummary& summary) {
  auto feed = plan.sharding == Sharding::kStatic
                  ? make_static_feed(todo, ranks.rank, ranks.world_size)
                  : make_dynamic_feed(todo, parts.communicator, store_key(StoreKey::kNextTile), parts.book,
                                      parts.handed != nullptr ? [&handed = *parts.handed] { handed.take_now(); }
                                                              : std::function<void()>{});
  if (parts.returned != nullptr && ranks.rank == 0) sweep_once_all_finished(*parts.returned, parts.communicator);
  auto heartbeat = Heartbeat::from_environment();
  TimelineRecorder timeline(summary.timeline);
  summary.started_unix_s = unix_now();
  timeline.record({0, 0, 0});
  // Every rank adds its tiles to one counter on the store, so rank 0's line shows the
  // whole run's progress: at most once a second, not per batch (a GPU does dozens).
  std::int64_t counted = 0;
  std::int64_t run_done = 0;
  auto last_count = std::chrono::steady_clock::time_point{};
  const auto on_batch = [&](const PipelineStats& running) {
    if (const auto now = std::chrono::steady_clock::now(); now - last_count >= std::chrono::seconds(1)) {
      run_done = parts.communicator.add(store_key(StoreKey::kTilesDone), running.tiles - counted);
      counted = running.tiles;
      last_count = now;
    }
    printer.update(running, run_done);
    timeline.record({running.elapsed_s, running.tiles, running.data_wait_s});
    heartbeat.progress();
    parts.communicator.check_peers();
    if (parts.returned != nullptr) parts.returned->finished_up_to(running.tiles);
  };
  auto [stats, own_failures] = run_pipeline(
      {parts.source, plan.in_flight.workers,
       stop_when_asked(
           paced_by_writer(std::move(feed), parts.source.tiles(), parts.communicator, kRunWriters.writer_of_raster(0),
                           unwritten_limit(parts.source.tiles(), plan.in_flight.batch_size, ranks.world_size),
                           parts.returned),
           parts.communicator),
       plan.in_flight.reader_queue()},
      parts.model, plan.device, parts.output, {plan.in_flight.batch_size, on_batch, parts.source.raw_scaling()});
  // A stop (the launcher's SIGTERM once a peer died) may have ended the loop before the
  // watch saw the loss: a run that lost a rank is not "done".
  if (stop_signal() != 0) {
    parts.communicator.check_peers_after_a_look();
  } else {
    parts.communicator.check_peers();
  }
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
