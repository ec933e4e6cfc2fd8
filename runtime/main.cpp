// mgpr: the runtime. Named as in the original Python project, so `srun mgpr gpus=2
// batch_size=16 ...` habits carry over.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

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
#include "tile_scores.hpp"
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

int run_rank(const RunConfig& config, const RankEnvironment& ranks) {
  const auto started = Clock::now();
  const auto backend = rt::configure_backend(config.threads > 0 ? config.threads : default_threads(ranks));
  const auto device = rt::choose_device(config, ranks.local_rank);
  if (config.task != "classify") {
    throw mgpr::UsageError(fmt::format("task={}: this mgpr writes results for task=classify only so far (detect "
                                       "and segment outputs are not implemented yet); use task=classify",
                                       config.task));
  }
  // Inputs and model are checked before rendezvous: a bad input fails every rank at
  // once with the same message, instead of leaving peers waiting.
  const auto source = rt::make_tile_source(config);
  rt::TileModel model(config, device, source->channels());
  print_banner(ranks, backend, device, model, *source);

  auto watchdog_report = rt::ProgressReport::from_environment();
  // Also tells the plugin's watchdog this rank arrived (MGPR_PROGRESS_FILE).
  rt::RendezvousOptions rendezvous;
  rendezvous.timeout = std::chrono::seconds(config.rendezvous_timeout);
  rendezvous.use_gpu = device.is_cuda;
  rendezvous.device_index = device.is_cuda ? static_cast<int>(device.device.index()) : 0;
  auto communicator = rt::join_run(ranks, rendezvous);

  auto summary = base_summary(ranks, device);
  summary.warnings = model.warnings();
  try {
    const auto& tiles = source->tiles();
    auto feed = config.sharding == "static" ? rt::make_static_feed(tiles, ranks.rank, ranks.world_size)
                                            : rt::make_dynamic_feed(tiles, *communicator, "mgpr/next-tile");
    rt::ReaderPool readers(*source, config.workers, std::move(feed),
                           static_cast<std::size_t>(2 * config.batch_size + config.workers));
    rt::TileScores scores(config.model);
    rt::ProgressPrinter printer(ranks.rank, static_cast<std::int64_t>(tiles.size()) / ranks.world_size,
                                config.log_interval, ::isatty(STDERR_FILENO) != 0);
    const auto stats = rt::run_pipeline(readers, model, device, scores,
                                        {config.batch_size, [&](const rt::PipelineStats& running) {
                                           printer.update(running);
                                           watchdog_report.progress();
                                         }});
    printer.finish(stats);

    std::vector<std::string> raster_names;
    for (const auto& raster : source->rasters()) raster_names.push_back(raster.path);
    rt::gather_and_write_scores(scores.rows(), *communicator, raster_names,
                                std::filesystem::path(config.output_dir) / "tile_scores.csv");

    summary.tiles = stats.tiles;
    summary.batches = stats.batches;
    summary.model_s = stats.model_s;
    summary.read_s = stats.read_s;
    summary.data_wait_s = stats.data_wait_s;
    summary.memory_avg_bytes = stats.memory_avg_bytes;
    summary.memory_peak_bytes = stats.memory_peak_bytes;
    summary.memory_total_bytes = stats.memory_total_bytes;
    // The tile loop's own time, so tiles/s and busy % are not diluted by start-up.
    summary.elapsed_s = stats.elapsed_s;
  } catch (const std::exception& failure) {
    // Whatever was measured is kept: the summary says which rank failed and why.
    summary.status = mgpr::RankStatus::kFailed;
    summary.error = failure.what();
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    write_rank_summary(summary);
    throw;
  }
  write_rank_summary(summary);

  const auto gathered = communicator->all_gather(mgpr::to_json_text(summary));
  if (ranks.rank == 0) {
    std::vector<mgpr::RankSummary> all;
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      all.push_back(mgpr::rank_summary_from_json(gathered[i], fmt::format("rank {}", i)));
    }
    fmt::print("{}", rt::usage_summary(all, std::chrono::duration<double>(Clock::now() - started).count()));
    std::fflush(stdout);
  }
  communicator->barrier();
  return 0;
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
