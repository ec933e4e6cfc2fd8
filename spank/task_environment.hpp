#pragma once
// The pure logic behind each task's environment: which steps are wired as ranks, the
// step's MASTER_PORT, the one GPU a rank keeps, where logs go, and the variables a
// task gets. No Slurm calls here, so unit tests cover all of it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mgpr/env_names.hpp"
#include "step_settings.hpp"

namespace mgpr::spank {

// Real srun steps only: the batch script, the extern step (pam_slurm_adopt's container)
// and salloc's interactive shell are not ranks of a distributed run.
bool is_rank_step(std::uint32_t step_id);

// What Slurm tells the plugin about one task, read in task_init.
struct TaskFacts {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;
  std::optional<std::string> visible_devices;         // CUDA_VISIBLE_DEVICES as Slurm set it
  std::optional<std::string> task_log_dir;            // MGPR_LOG_DIR already in the environment
  std::optional<std::string> submit_dir;              // SLURM_SUBMIT_DIR
  std::optional<std::filesystem::path> progress_dir;  // when the watchdog reads reports
};

using Environment = EnvAssignments;

// The variables to set in the task, in a stable order (see docs/spank.md): torchrun's
// (common's torchrun_environment, with the port from derive_master_port unless
// --mgpr-port set one), the rank's one GPU (device_for_rank), then mgpr's own:
// MGPR_LOG_DIR (job_log_dir), MGPR_CONFIG, MGPR_ON_RANK_LOSS, MGPR_PROGRESS_FILE.
Environment task_environment(const TaskFacts& facts, const StepSettings& settings);

}  // namespace mgpr::spank
