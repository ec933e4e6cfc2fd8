#include "app/rank_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

#include "app/rank_summary.hpp"
#include "distributed/communicator.hpp"
#include "distributed/heartbeat.hpp"
#include "distributed/sharding.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/input_list.hpp"
#include "mgpr/process.hpp"
#include "mgpr/version.hpp"
#include "model/backend_info.hpp"
#include "model/cuda_backend.hpp"
#include "model/device_memory.hpp"
#include "model/model.hpp"
#include "pipeline/memory_budget.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/progress_printer.hpp"
#include "resume/stop_request.hpp"
#include "resume/tile_journal.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The store's counter of tiles every rank has done, for rank 0's progress line.
constexpr const char* kRunProgressKey = "mgpr/tiles-done";

// What the prepare phase settles, before any rank waits on another.
struct Prepared {
  BackendInfo backend;
  std::unique_ptr<TileSource> source;
  std::unique_ptr<TileModel> model;
  std::unique_ptr<TaskOutput> output;
};

// Up to this many rasters the banner has a line for each.
constexpr std::size_t kRasterLinesUpTo = 8;

void print_raster_summary(const std::vector<RasterDescription>& rasters) {
  std::int64_t pixels = 0;
  std::set<std::string> crss;
  std::set<std::string> types;
  for (const auto& raster : rasters) {
    pixels += static_cast<std::int64_t>(raster.width) * raster.height;
    crss.insert(raster.crs_wkt);
    types.insert(fmt::format("{} x{}", raster.data_type, raster.bands.size()));
  }
  fmt::print("#   {} rasters, {:.1f} Mpx, from {} to {}; {} CRS{}, bands: {}\n", rasters.size(),
             static_cast<double>(pixels) / 1e6, redact_input(rasters.front().path), redact_input(rasters.back().path),
             crss.size(), crss.size() == 1 ? "" : "s", fmt::join(types, ", "));
}

// Thousands of rasters: how many are read resampled to the model's gsd, in one line.
void print_resolution_summary(const std::vector<RasterDescription>& rasters) {
  const auto resampled =
      std::count_if(rasters.begin(), rasters.end(), [](const auto& raster) { return raster.native_grid.has_value(); });
  if (resampled > 0) {
    fmt::print("#   {} of {} rasters read resampled to the model's ground resolution, e.g. {}: {}\n", resampled,
               rasters.size(), redact_input(rasters.front().path), rasters.front().resolution_note);
  }
}

// Rasters read at a resolution other than the model's, or that cannot be compared with
// it: on stderr, where warnings go, a line each for the first few.
void print_resolution_warnings(const std::vector<RasterDescription>& rasters) {
  std::size_t warned = 0;
  for (const auto& raster : rasters) {
    if (!raster.resolution_warning) continue;
    if (++warned <= kRasterLinesUpTo) {
      fmt::print(stderr, "mgpr: warning: raster {}: resolution {}\n", redact_input(raster.path),
                 raster.resolution_note);
    }
  }
  if (warned > kRasterLinesUpTo) {
    fmt::print(stderr, "mgpr: warning: {} more rasters like these ({} in all)\n", warned - kRasterLinesUpTo, warned);
  }
}

void print_banner(const RankEnvironment& ranks, const RunPlan& plan, const Prepared& run) {
  const auto& device = plan.device;
  fmt::print("# mgpr {} | rank {:>3}/{} | local {} | host {} | device {} | threads {} | libtorch {} | gdal {}\n",
             kVersion, ranks.rank, ranks.world_size, ranks.local_rank, host_name(""), device.name, run.backend.threads,
             run.backend.torch_version, run.backend.gdal_version);
  if (ranks.rank == 0) {
    const auto& rasters = run.source->rasters();
    // A line per raster while they can be read; thousands get one summary line.
    if (rasters.size() <= kRasterLinesUpTo) {
      for (const auto& raster : rasters) {
        fmt::print("#   raster {}: {}x{} px, {} bands ({}), using bands {}, CRS {}, missing pixels: {}\n",
                   redact_input(raster.path), raster.width, raster.height, raster.band_count, raster.data_type,
                   fmt::join(raster.bands, ","), raster.crs_wkt.empty() ? "none" : "set", raster.missing_pixels);
        if (!raster.resolution_note.empty()) fmt::print("#     resolution {}\n", raster.resolution_note);
      }
    } else {
      print_raster_summary(rasters);
      print_resolution_summary(rasters);
    }
    print_resolution_warnings(rasters);
    fmt::print("#   {} tiles of {} px, model {}\n", run.source->tiles().size(), run.source->tile_size(),
               run.model->description());
    if (!plan.model_card.empty()) fmt::print("#   model card: {}\n", plan.model_card);
  }
  std::fflush(stdout);
}

// Inputs and model are checked before rendezvous: a bad input fails every rank at
// once with the same message, instead of leaving peers waiting.
Prepared prepare(const RunPlan& plan, const RankEnvironment& ranks) {
  Prepared run;
  run.backend = configure_backend(plan.threads);
  run.source = make_tile_source(plan.source);
  check_run_fits(plan, *run.source);
  run.model = std::make_unique<TileModel>(plan.model, plan.device, run.source->channels(), plan.execution);
  run.output = make_task_output(plan_outputs(plan.output, *run.source));
  run.output->check_output(run.model->dummy_output(), 1, plan.source.tile_size);
  check_class_names(plan.output.task, run.model->dummy_output(), plan.output.class_names, plan.class_names_origin);
  // After the checks, which read the dummy tile's output whole.
  run.model->set_output_reduction(run.output->device_reduction());
  print_banner(ranks, plan, run);
  return run;
}

std::vector<Tile> tiles_to_do(const std::vector<Tile>& tiles, const TileResults& done) {
  std::vector<Tile> todo;
  for (const auto& tile : tiles) {
    if (!done.contains(tile.id)) todo.push_back(tile);
  }
  return todo;
}

// Joins the other ranks (which also tells the plugin's watchdog this rank arrived).
// Every rank read the journals before this and none appends before the barrier at its
// end, so all ranks agree on the tiles left to do.
std::unique_ptr<Communicator> join(const RunPlan& plan, const RankEnvironment& ranks,
                                   const std::shared_ptr<EarlyStore>& early_store, const TileResults& done,
                                   std::size_t all_tiles, std::size_t tiles_left) {
  auto communicator = join_run(ranks, plan.rendezvous, early_store);
  if (ranks.rank == 0) {
    if (!plan.resume) {
      if (const auto failed = remove_journals(plan.journal_folder); !failed.empty()) {
        throw IoError(
            fmt::format("resume=false: cannot remove the earlier run's journal ({}); remove it by hand", failed));
      }
    }
    record_raster_identities(plan.journal_folder, plan.source.rasters);
    if (!done.empty()) {
      fmt::print("# resuming: {} of {} tiles were finished by an earlier run ({}); {} left\n", done.size(), all_tiles,
                 plan.journal_folder.string(), tiles_left);
    }
    std::fflush(stdout);
  }
  communicator->barrier();
  return communicator;
}

// How the tile loop ended, as every rank agrees after gathering.
enum class Outcome {
  kComplete,       // every tile has its result
  kRastersFailed,  // every tile but those of rasters that could not be read
  kStopped,        // stopped on request with tiles left; a rerun finishes them
};

// Failures travel between ranks as lines "image<TAB>reason".
std::string encode_failures(const RasterFailures& failures) {
  std::string text;
  for (const auto& [image, reason] : failures) {
    std::string line = reason;
    std::replace_if(
        line.begin(), line.end(), [](char c) { return c == '\n' || c == '\t' || c == '\r'; }, ' ');
    text += fmt::format("{}\t{}\n", image, line);
  }
  return text;
}

void decode_failures(const std::string& text, RasterFailures& into) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    into.try_emplace(std::stoi(line.substr(0, tab)), line.substr(tab + 1));
  }
}

bool every_tile_but_failed_done(const std::vector<Tile>& tiles, const TileResults& done, const RasterFailures& failed) {
  return std::all_of(tiles.begin(), tiles.end(),
                     [&](const Tile& tile) { return done.contains(tile.id) || failed.contains(tile.id.image); });
}

// Stops handing out tiles once a stop was asked for; tiles already claimed finish.
TileFeed stoppable(TileFeed feed) {
  return [inner = std::move(feed)]() -> std::optional<Tile> {
    if (stop_signal() != 0) return std::nullopt;
    return inner();
  };
}

// The tile loop over this rank's share of `todo`; then every rank learns every result
// (into `done`) and every raster that failed (into `failed`), so all agree how the run
// ended, and rank 0 writes the outputs when every tile is done but those of failed
// rasters.
Outcome process(const RunPlan& plan, const RankEnvironment& ranks, Prepared& run, Communicator& communicator,
                const std::vector<Tile>& todo, std::size_t all_tiles, TileResults& done, RasterFailures& failed,
                RankSummary& summary) {
  TileJournal journal(plan.journal_folder, ranks.rank);
  run.output->set_journal(&journal);
  auto feed = plan.sharding == Sharding::kStatic ? make_static_feed(todo, ranks.rank, ranks.world_size)
                                                 : make_dynamic_feed(todo, communicator, "mgpr/next-tile");
  const auto run_tiles = static_cast<std::int64_t>(todo.size());
  ProgressPrinter printer(ranks.rank, run_tiles / ranks.world_size, run_tiles, plan.log_interval,
                          ::isatty(STDERR_FILENO) != 0);
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
      run_done = communicator.add(kRunProgressKey, running.tiles - counted);
      counted = running.tiles;
      last_count = now;
    }
    printer.update(running, run_done);
    timeline.record({running.elapsed_s, running.tiles, running.data_wait_s});
    heartbeat.progress();
  };
  const auto [stats, own_failures] = run_pipeline(
      {*run.source, plan.in_flight.workers, stoppable(std::move(feed)), plan.in_flight.reader_queue()}, *run.model,
      plan.device, *run.output, {plan.in_flight.batch_size, on_batch, run.source->raw_scaling()});
  timeline.close({stats.elapsed_s, stats.tiles, stats.data_wait_s});
  printer.finish(stats);
  fill_from_stats(summary, stats);
  for (const auto& [image, reason] : own_failures) {
    const auto& raster = run.source->rasters().at(static_cast<std::size_t>(image));
    summary.failed_rasters.push_back({redact_input(raster.path), reason});
    fmt::print(stderr, "mgpr: rank {}: raster {} could not be read; its other tiles are skipped: {}\n", ranks.rank,
               redact_input(raster.path), reason);
  }
  heartbeat.finished();  // from here it waits for its peers, and rank 0 then writes

  const auto done_before = done.size();
  for (const auto& text : communicator.all_gather(encode_results(run.output->new_results()))) {
    decode_results(text, done);
  }
  for (const auto& text : communicator.all_gather(encode_failures(own_failures))) decode_failures(text, failed);
  printer.run_finished(static_cast<std::int64_t>(done.size() - done_before));
  const auto outcome = done.size() == all_tiles                                        ? Outcome::kComplete
                       : every_tile_but_failed_done(run.source->tiles(), done, failed) ? Outcome::kRastersFailed
                                                                                       : Outcome::kStopped;
  if (outcome != Outcome::kStopped && ranks.rank == 0) {
    try {
      for (const auto& file : run.output->write_outputs(done, failed)) {
        fmt::print("# wrote {}\n", file.string());
        summary.outputs.push_back(std::filesystem::absolute(file).string());
      }
    } catch (const StoppedOnRequest& stopped) {
      // Every tile is journaled; the files already written are complete, and a rerun
      // writes them all again from the journal.
      fmt::print(stderr, "mgpr: {}\n", stopped.what());
      return Outcome::kStopped;
    }
    // The outputs are complete; a journal left behind only makes a rerun redo the writing.
    // With failed rasters it stays: a rerun reads only their tiles.
    if (outcome == Outcome::kComplete) {
      if (const auto not_removed = remove_journals(plan.journal_folder); !not_removed.empty()) {
        fmt::print(stderr, "mgpr: warning: could not remove the journal: {}\n", not_removed);
      }
    }
  }
  return outcome;
}

// Rank 0 prints every rank's summary as one table; all ranks wait for it.
void report(const RunPlan& plan, const RankEnvironment& ranks, Communicator& communicator, const RankSummary& summary,
            const TileResults& done, const RasterFailures& failed, const TileSource& source, Outcome outcome,
            Clock::time_point started) {
  const auto all_tiles = source.tiles().size();
  const auto gathered = communicator.all_gather(to_json_text(summary));
  if (ranks.rank == 0) {
    std::vector<RankSummary> all;
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      all.push_back(rank_summary_from_json(gathered[i], fmt::format("rank {}", i)));
    }
    fmt::print("{}", usage_summary(all, std::chrono::duration<double>(Clock::now() - started).count()));
    if (!failed.empty()) {
      fmt::print("# {} of {} rasters could not be read; the results of the others are written:\n", failed.size(),
                 source.rasters().size());
      for (const auto& [image, reason] : failed) {
        fmt::print("#   {}: {}\n", redact_input(source.rasters().at(static_cast<std::size_t>(image)).path), reason);
      }
      fmt::print(
          "# their finished tiles are kept in {}: fix or replace those rasters (same paths) and run the same "
          "command again to do only what is missing\n",
          plan.journal_folder.string());
    }
    if (outcome == Outcome::kStopped) {
      fmt::print(
          "# stopped: {} of {} tiles are finished and kept in {}; run the same command again (a requeued "
          "job does so) to finish the rest\n",
          done.size(), all_tiles, plan.journal_folder.string());
    }
    std::fflush(stdout);
  }
  communicator.barrier();
}

}  // namespace

int run_rank(const RunPlan& plan, const RankEnvironment& ranks) {
  const auto started = Clock::now();
  install_stop_handlers();
  const auto early_store = serve_store_early(ranks, plan.rendezvous);
  // Two ranks on one GPU are refused before either spends minutes loading the model.
  if (plan.device.is_cuda)
    refuse_shared_gpu(ranks, plan.rendezvous, early_store, cuda_backend::device_uuid(plan.device.device.index()));
  auto run = prepare(plan, ranks);

  TileResults done = plan.resume ? read_journals(plan.journal_folder) : TileResults{};
  const auto changed = drop_results_of_changed_rasters(done, plan.journal_folder, plan.source.rasters);
  if (!changed.empty() && ranks.rank == 0) {
    fmt::print(stderr, "mgpr: {} raster(s) changed since the interrupted run (e.g. {}); their tiles are done again\n",
               changed.size(), redact_input(plan.source.rasters.at(static_cast<std::size_t>(changed.front()))));
  }
  if (const auto foreign = keep_results_of(done, run.source->tiles()); foreign > 0 && ranks.rank == 0) {
    fmt::print(stderr,
               "mgpr: warning: {} result(s) in the journal {} are for tiles these inputs do not have; they are "
               "ignored and those tiles computed again\n",
               foreign, plan.journal_folder.string());
  }
  const std::size_t all_tiles = run.source->tiles().size();
  const auto todo = tiles_to_do(run.source->tiles(), done);
  auto communicator = join(plan, ranks, early_store, done, all_tiles, todo.size());

  auto summary = base_summary(ranks, plan.device);
  describe_model(summary, plan.output.class_names, plan.model_card);
  summary.warnings = run.model->warnings();
  auto outcome = Outcome::kStopped;
  RasterFailures failed;
  try {
    outcome = process(plan, ranks, run, *communicator, todo, all_tiles, done, failed, summary);
  } catch (const std::exception& failure) {
    // Whatever was measured is kept: the summary says which rank failed and why.
    summary.status = RankStatus::kFailed;
    summary.error = failure.what();
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    mark_end_of_timeline(summary);
    write_rank_summary(summary);
    throw;
  }
  if (outcome == Outcome::kStopped) {
    summary.status = RankStatus::kInterrupted;
    summary.error = fmt::format("stopped by signal {} ({}) with {} of {} tiles finished", stop_signal(),
                                strsignal(stop_signal()), done.size(), all_tiles);
  }
  write_rank_summary(summary);
  report(plan, ranks, *communicator, summary, done, failed, *run.source, outcome, started);
  switch (outcome) {
    case Outcome::kComplete:
      return 0;
    case Outcome::kRastersFailed:
      return kExitFailure;
    case Outcome::kStopped:
      break;
  }
  return kExitStopped;
}

}  // namespace mgpr::runtime
