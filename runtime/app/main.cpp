// mgpr: the runtime. Named as in the original Python project, so `srun mgpr gpus=2
// batch_size=16 ...` habits carry over. This file parses and maps failures to exit
// codes; app/rank_run.cpp is the run itself.
#include <fmt/format.h>
#include <torch/version.h>

#include <cstdlib>
#include <new>

#include "app/rank_run.hpp"
#include "distributed/local_launch.hpp"
#include "mgpr/cli.hpp"
#include "mgpr/config.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/model_card.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/version.hpp"
#include "model/backend_info.hpp"
#include "model/detection_limits.hpp"

namespace {

namespace rt = mgpr::runtime;

int run(const std::filesystem::path& config_file, const std::vector<std::string>& arguments) {
  std::optional<mgpr::ModelCard> card;
  const mgpr::RunConfig config = mgpr::resolve_config(config_file, arguments, &card);
  const auto ranks = mgpr::rank_environment_from_env();
  if (!ranks && config.gpus > 1) {
    // Outside Slurm and any launcher: start the ranks here, one per GPU (or CPU ranks).
    const char* visible = std::getenv(mgpr::env::kCudaVisibleDevices);
    if (visible != nullptr && mgpr::parse_accelerator(config.accelerator) != mgpr::Accelerator::kCpu) {
      rt::refuse_shared_gpus(config.gpus, visible);
    }
    const bool on_gpus = mgpr::parse_accelerator(config.accelerator) != mgpr::Accelerator::kCpu &&
                         rt::configure_backend(1).cuda_available;
    std::vector<std::string> forwarded = arguments;
    if (!config_file.empty()) forwarded.insert(forwarded.begin(), {"--config", config_file.string()});
    return rt::run_local_ranks(config.gpus, on_gpus, forwarded,
                               mgpr::parse_on_rank_loss(config.on_rank_loss) == mgpr::OnRankLoss::kContinue);
  }
  rt::follow_local_launcher();
  const auto rank = ranks.value_or(mgpr::RankEnvironment{});
  // Rank 0 serves the run's store from here (run_rank's serve_store_early gets this one)
  // and publishes the inputs expanded once; the other ranks take its list.
  const auto early_store = rt::serve_store_early(rank, rt::rendezvous_options(config));
  auto rasters = rt::expand_inputs_once(config, rank, early_store);
  auto plan = rt::make_run_plan(config, rank, card, std::move(rasters));
  rt::agree_on_journal(plan, rank, early_store);
  return rt::run_rank(plan, rank);
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_file;
  std::vector<std::string> arguments;
  CLI::App app{"mgpr: run a deep-learning model over large rasters, tile by tile, on every GPU Slurm gave the job."};
  // The LibTorch too: two builds of one mgpr version can run different kernels.
  app.set_version_flag("--version", fmt::format("mgpr {} (LibTorch {})", mgpr::kVersion, TORCH_VERSION));
  app.add_option("--config", config_file, "TOML run configuration (default: $MGPR_CONFIG)");
  app.add_option("arguments", arguments, "RASTER paths and key=value overrides, in any order");
  std::string print_config;
  app.add_option("--cfg", print_config,
                 "job: print the resolved configuration and where each value came from, and run nothing (Hydra's "
                 "--cfg job)")
      ->check(CLI::IsMember({"job"}));
  std::string model_info;
  app.add_option("--model-info", model_info,
                 "print the model card inside a TorchScript FILE (its settings and what mgpr does with them), and "
                 "run nothing")
      ->type_name("FILE");
  app.footer(mgpr::describe_config_keys());
  if (const auto code = mgpr::parse_command_line(app, argc, argv)) return *code;
  if (config_file.empty()) {
    if (const char* from_env = std::getenv(mgpr::env::kConfig)) config_file = from_env;
  }
  try {
    if (!model_info.empty()) {
      std::error_code error;
      if (!std::filesystem::is_regular_file(model_info, error)) {
        throw mgpr::UsageError(
            fmt::format("--model-info '{}': no such file; give a TorchScript model file", model_info));
      }
      fmt::print("{}", mgpr::describe_model_card(model_info, mgpr::read_model_card(model_info)));
      fmt::print("{}", rt::describe_detection_limits(model_info));
      return 0;
    }
    if (!print_config.empty()) {
      fmt::print("{}", mgpr::describe_resolved_config(config_file, arguments));
      return 0;
    }
    return run(config_file, arguments);
  } catch (const mgpr::UsageError& error) {
    fmt::print(stderr, "mgpr: error: {}\n", error.what());
    return mgpr::kExitUsage;
  } catch (const std::bad_alloc&) {
    // Past the start-up check (pipeline/memory_budget.hpp): the model's own memory.
    fmt::print(stderr,
               "mgpr: failed: out of memory; lower batch_size or tile_size, or ask Slurm for more memory with "
               "--mem\n");
    return mgpr::kExitFailure;
  } catch (const std::exception& error) {
    fmt::print(stderr, "mgpr: failed: {}\n", error.what());
    return mgpr::kExitFailure;
  }
}
