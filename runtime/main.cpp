// mgpr: the runtime. Named as in the original Python project, so `srun mgpr gpus=2
// batch_size=16 ...` habits carry over.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "backend_info.hpp"
#include "communicator.hpp"
#include "device_memory.hpp"
#include "local_launch.hpp"
#include "mgpr/config.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/summary.hpp"
#include "mgpr/version.hpp"
#include "model.hpp"
#include "pipeline.hpp"
#include "progress_report.hpp"
#include "reader_pool.hpp"
#include "run_report.hpp"
#include "tile_feed.hpp"
#include "stop_request.hpp"
#include "task_output.hpp"
#include "tile_journal.hpp"
#include "tile_source.hpp"

namespace {

using mgpr::RankEnvironment;
using mgpr::RunConfig;
namespace rt = mgpr::runtime;
using Clock = std::chrono::steady_clock;

std::string hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::string env_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : fallback;
}

// Slurm's CPUs per task when set; otherwise the CPUs this process may run on, shared
// between the ranks of this machine so local ranks do not oversubscribe it.
int default_threads(const RankEnvironment& ranks) {
  if (const char* cpus = std::getenv(mgpr::env::kSlurmCpusPerTask)) return std::max(1, std::atoi(cpus));
  cpu_set_t set;
  CPU_ZERO(&set);
  const int usable = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                                     : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  return std::max(1, usable / std::max(1, ranks.local_world_size));
}

// The job's log folder: the plugin's MGPR_LOG_DIR, else ./slurm_logs/<jobid> inside a
// Slurm job, else none (a plain local run keeps no per-job summary).
std::filesystem::path job_log_dir() {
  if (const char* dir = std::getenv(mgpr::env::kLogDir)) return dir;
  if (const char* job = std::getenv(mgpr::env::kSlurmJobId)) {
    return mgpr::JobLogLayout{mgpr::kDefaultLogRoot, job}.job_dir();
  }
  return {};
}

void write_rank_summary(const mgpr::RankSummary& summary) {
  const auto dir = job_log_dir();
  if (dir.empty()) return;
  std::filesystem::create_directories(dir);
  const mgpr::JobLogLayout layout{dir.parent_path(), dir.filename().string()};
  mgpr::write_file_atomically(layout.rank_summary(summary.rank), mgpr::to_json_text(summary));
}

mgpr::RankSummary base_summary(const RankEnvironment& ranks, const rt::DeviceChoice& device) {
  mgpr::RankSummary summary;
  summary.job_id = env_or(mgpr::env::kSlurmJobId, "local");
  summary.step_id = env_or(mgpr::env::kSlurmStepId, "");
  summary.rank = ranks.rank;
  summary.world_size = ranks.world_size;
  summary.local_rank = ranks.local_rank;
  summary.host = hostname();
  summary.device = device.name;
  summary.gpu_name = rt::device_product_name(device);
  return summary;
}

void print_banner(const RankEnvironment& ranks, const rt::BackendInfo& backend, const rt::DeviceChoice& device,
                  const rt::TileModel& model, const rt::TileSource& source) {
  fmt::print("# mgpr {} | rank {:>3}/{} | local {} | host {} | device {} | threads {} | libtorch {} | gdal {}\n",
             mgpr::kVersion, ranks.rank, ranks.world_size, ranks.local_rank, hostname(), device.name, backend.threads,
             backend.torch_version, backend.gdal_version);
  if (ranks.rank == 0) {
    for (const auto& raster : source.rasters()) {
      fmt::print("#   raster {}: {}x{} px, {} bands ({}), using bands {}, CRS {}\n", raster.path, raster.width,
                 raster.height, raster.band_count, raster.data_type, fmt::join(raster.bands, ","),
                 raster.crs_wkt.empty() ? "none" : "set");
    }
    fmt::print("#   {} tiles of {} px, model {}\n", source.tiles().size(), source.tile_size(), model.description());
  }
  std::fflush(stdout);
}

std::vector<rt::Tile> tiles_to_do(const std::vector<rt::Tile>& tiles, const rt::TileResults& done) {
  std::vector<rt::Tile> todo;
  for (const auto& tile : tiles) {
    if (!done.contains(tile.id)) todo.push_back(tile);
  }
  return todo;
}

// Stops handing out tiles once a stop was asked for; tiles already claimed finish.
rt::TileFeed stoppable(rt::TileFeed feed) {
  return [inner = std::move(feed)]() -> std::optional<rt::Tile> {
    if (rt::stop_signal() != 0) return std::nullopt;
    return inner();
  };
}

void fill_from_stats(mgpr::RankSummary& summary, const rt::PipelineStats& stats) {
  summary.tiles = stats.tiles;
  summary.batches = stats.batches;
  summary.model_s = stats.model_s;
  summary.read_s = stats.read_s;
  summary.data_wait_s = stats.data_wait_s;
  summary.memory_avg_bytes = stats.memory_avg_bytes;
  summary.memory_peak_bytes = stats.memory_peak_bytes;
  summary.memory_total_bytes = stats.memory_total_bytes;
  summary.memory_device_peak_bytes = stats.memory_device_peak_bytes;
  // The tile loop's own time, so tiles/s and busy % are not diluted by start-up.
  summary.elapsed_s = stats.elapsed_s;
}

int run_rank(const RunConfig& config, const RankEnvironment& ranks) {
  const auto started = Clock::now();
  rt::install_stop_handlers();
  const auto backend = rt::configure_backend(config.threads > 0 ? config.threads : default_threads(ranks));
  const auto device = rt::choose_device(config, ranks.local_rank);
  // Inputs and model are checked before rendezvous: a bad input fails every rank at
  // once with the same message, instead of leaving peers waiting.
  const auto source = rt::make_tile_source(config);
  rt::TileModel model(config, device, source->channels());
  const auto plan = rt::plan_outputs(config, *source);
  auto output = rt::make_task_output(plan);
  output->check_output(model.dummy_output(), 1, config.tile_size);
  print_banner(ranks, backend, device, model, *source);

  // Every rank reads the journals before the rendezvous and none appends before the
  // barrier after it, so all ranks agree on the tiles left to do.
  const auto journal_folder = rt::journal_dir(config);
  rt::TileResults done = config.resume ? rt::read_journals(journal_folder) : rt::TileResults{};
  const auto& all_tiles = source->tiles();
  const auto todo = tiles_to_do(all_tiles, done);

  auto watchdog_report = rt::ProgressReport::from_environment();
  // Also tells the plugin's watchdog this rank arrived (MGPR_PROGRESS_FILE).
  rt::RendezvousOptions rendezvous;
  rendezvous.timeout = std::chrono::seconds(config.rendezvous_timeout);
  rendezvous.use_gpu = device.is_cuda;
  rendezvous.device_index = device.is_cuda ? static_cast<int>(device.device.index()) : 0;
  auto communicator = rt::join_run(ranks, rendezvous);
  if (ranks.rank == 0) {
    if (!config.resume) {
      if (const auto failed = rt::remove_journals(journal_folder); !failed.empty()) {
        throw mgpr::UsageError(
            fmt::format("resume=false: cannot remove the earlier run's journal ({}); remove it by hand", failed));
      }
    }
    if (!done.empty()) {
      fmt::print("# resuming: {} of {} tiles were finished by an earlier run ({}); {} left\n", done.size(),
                 all_tiles.size(), journal_folder.string(), todo.size());
    }
    std::fflush(stdout);
  }
  communicator->barrier();

  auto summary = base_summary(ranks, device);
  summary.warnings = model.warnings();
  bool complete = false;
  try {
    rt::TileJournal journal(journal_folder, ranks.rank);
    output->set_journal(&journal);
    auto feed = config.sharding == "static" ? rt::make_static_feed(todo, ranks.rank, ranks.world_size)
                                            : rt::make_dynamic_feed(todo, *communicator, "mgpr/next-tile");
    rt::ReaderPool readers(*source, config.workers, stoppable(std::move(feed)),
                           static_cast<std::size_t>(2 * config.batch_size + config.workers));
    rt::ProgressPrinter printer(ranks.rank, static_cast<std::int64_t>(todo.size()) / ranks.world_size,
                                config.log_interval, ::isatty(STDERR_FILENO) != 0);
    const auto stats = rt::run_pipeline(readers, model, device, *output,
                                        {config.batch_size, [&](const rt::PipelineStats& running) {
                                           printer.update(running);
                                           watchdog_report.progress();
                                         }});
    printer.finish(stats);
    fill_from_stats(summary, stats);

    // Every rank learns every result, so all agree whether the run is complete; rank 0
    // writes the outputs only then.
    for (const auto& text : communicator->all_gather(rt::encode_results(output->new_results()))) {
      rt::decode_results(text, done);
    }
    complete = done.size() == all_tiles.size();
    if (complete && ranks.rank == 0) {
      for (const auto& file : output->write_outputs(done)) fmt::print("# wrote {}\n", file.string());
      // The outputs are complete; a journal left behind only makes a rerun redo the writing.
      if (const auto failed = rt::remove_journals(journal_folder); !failed.empty()) {
        fmt::print(stderr, "mgpr: warning: could not remove the journal: {}\n", failed);
      }
    }
  } catch (const std::exception& failure) {
    // Whatever was measured is kept: the summary says which rank failed and why.
    summary.status = mgpr::RankStatus::kFailed;
    summary.error = failure.what();
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    write_rank_summary(summary);
    throw;
  }
  if (!complete) {
    summary.status = mgpr::RankStatus::kInterrupted;
    summary.error = fmt::format("stopped by signal {} ({}) with {} of {} tiles finished", rt::stop_signal(),
                                strsignal(rt::stop_signal()), done.size(), all_tiles.size());
  }
  write_rank_summary(summary);

  const auto gathered = communicator->all_gather(mgpr::to_json_text(summary));
  if (ranks.rank == 0) {
    std::vector<mgpr::RankSummary> all;
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      all.push_back(mgpr::rank_summary_from_json(gathered[i], fmt::format("rank {}", i)));
    }
    fmt::print("{}", rt::usage_summary(all, std::chrono::duration<double>(Clock::now() - started).count()));
    if (!complete) {
      fmt::print("# stopped: {} of {} tiles are finished and kept in {}; run the same command again (a requeued "
                 "job does so) to finish the rest\n",
                 done.size(), all_tiles.size(), journal_folder.string());
    }
    std::fflush(stdout);
  }
  communicator->barrier();
  return complete ? 0 : rt::kExitStopped;
}

int run(const std::filesystem::path& config_file, const std::vector<std::string>& arguments) {
  const RunConfig config = mgpr::resolve_config(config_file, arguments);
  const auto ranks = mgpr::rank_environment_from_env();
  if (!ranks && config.gpus > 1) {
    // Outside Slurm and any launcher: start the ranks here, one per GPU (or CPU ranks).
    const bool on_gpus = config.accelerator != "cpu" && rt::configure_backend(1).cuda_available;
    std::vector<std::string> forwarded = arguments;
    if (!config_file.empty()) forwarded.insert(forwarded.begin(), {"--config", config_file.string()});
    return rt::run_local_ranks(config.gpus, on_gpus, forwarded);
  }
  return run_rank(config, ranks.value_or(RankEnvironment{}));
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_file;
  std::vector<std::string> arguments;
  CLI::App app{"mgpr: run a deep-learning model over large rasters, tile by tile, on every GPU Slurm gave the job."};
  app.set_version_flag("--version", std::string("mgpr ") + mgpr::kVersion);
  app.add_option("--config", config_file, "TOML run configuration (default: $MGPR_CONFIG)");
  app.add_option("arguments", arguments, "RASTER paths and key=value overrides, in any order");
  app.footer(mgpr::describe_config_keys());
  CLI11_PARSE(app, argc, argv);
  if (config_file.empty()) config_file = env_or(mgpr::env::kConfig, "");
  try {
    return run(config_file, arguments);
  } catch (const mgpr::UsageError& error) {
    fmt::print(stderr, "mgpr: error: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "mgpr: failed: {}\n", error.what());
    return 1;
  }
}
