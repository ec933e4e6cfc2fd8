// mgpr: the runtime. Named as in the original Python project, so `srun mgpr gpus=2
// batch_size=16 ...` habits carry over.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "backend_info.hpp"
#include "mgpr/config.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/summary.hpp"
#include "mgpr/version.hpp"
#include "raster_check.hpp"

namespace {

std::string hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::string env_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : fallback;
}

int default_threads() {
  if (const char* cpus = std::getenv(mgpr::env::kSlurmCpusPerTask)) return std::max(1, std::atoi(cpus));
  return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
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

int run(const std::filesystem::path& config_file, const std::vector<std::string>& arguments) {
  const auto started = std::chrono::steady_clock::now();
  const mgpr::RunConfig config = mgpr::resolve_config(config_file, arguments);
  const auto rank_env = mgpr::rank_environment_from_env().value_or(mgpr::RankEnvironment{});
  const auto backend = mgpr::runtime::configure_backend(config.threads > 0 ? config.threads : default_threads());
  const auto rasters = mgpr::runtime::check_rasters(config.use_fake_data ? std::vector<std::string>{}
                                                                         : config.image_path);

  fmt::print("# mgpr {} | rank {:>3}/{} | local {} | host {} | device {} | threads {} | libtorch {} | gdal {}\n",
             mgpr::kVersion, rank_env.rank, rank_env.world_size, rank_env.local_rank, hostname(),
             backend.cuda_available ? "cuda" : "cpu", backend.threads, backend.torch_version, backend.gdal_version);
  for (const auto& raster : rasters) {
    fmt::print("#   raster {}: {}x{} px, {} bands, CRS {}\n", raster.path, raster.width, raster.height, raster.bands,
               raster.crs_name.empty() ? "none" : raster.crs_name);
  }

  mgpr::RankSummary summary;
  summary.job_id = env_or(mgpr::env::kSlurmJobId, "local");
  summary.step_id = env_or(mgpr::env::kSlurmStepId, "");
  summary.rank = rank_env.rank;
  summary.world_size = rank_env.world_size;
  summary.local_rank = rank_env.local_rank;
  summary.host = hostname();
  summary.device = backend.cuda_available ? fmt::format("cuda:{}", rank_env.local_rank) : "cpu";
  // Unfinished: the tile pipeline (reader pool, sharding, model) is the runtime core
  // issue; until it lands no tile is run through a model, and the summary says so.
  summary.warnings.push_back("tile pipeline not implemented yet: inputs were checked, no tile was processed");
  summary.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (const auto dir = job_log_dir(); !dir.empty()) {
    std::filesystem::create_directories(dir);
    const mgpr::JobLogLayout layout{dir.parent_path(), dir.filename().string()};
    mgpr::write_file_atomically(layout.rank_summary(rank_env.rank), mgpr::to_json_text(summary));
  }
  return 0;
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
  }
}
