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

#include "settings.hpp"

namespace mgpr::spank {

// Real srun steps only: the batch script, the extern step (pam_slurm_adopt's container)
// and salloc's interactive shell are not ranks of a distributed run.
bool is_rank_step(std::uint32_t step_id);

// The step's rendezvous port, within [port_min, port_max]. Deterministic, so every node
// of the step computes the same one without talking to the others; steps of one job
// get consecutive ports, so two steps of a job on one node never share one (until the
// range wraps), and different jobs are spread over the range.
int derive_master_port(std::uint32_t job_id, std::uint32_t step_id, int port_min, int port_max);

// "0,1" -> {"0", "1"}; empty entries are dropped.
std::vector<std::string> split_device_list(std::string_view list);

// The device a rank keeps out of those Slurm bound to its task. Picks by position, not
// by value, so it is right whether Slurm wrote global indices ("2,3") or cgroups
// renumbered them ("0,1"). A single device means Slurm already bound one per task
// (--gpus-per-task, --gpu-bind): it is kept. With more ranks than devices (a geometry
// problem allowed by strict=0) ranks share devices round-robin. nullopt: no device.
std::optional<std::string> device_for_rank(std::span<const std::string> devices, int local_rank);

// MGPR_LOG_DIR: <log_dir>/<jobid> when plugstack.conf names a log_dir, else the one the
// task already has (mgpr-submit's job script exports it), else
// <submit dir>/slurm_logs/<jobid>. Relative log_dir values resolve against the submit dir.
std::filesystem::path choose_log_dir(const std::string& plugin_log_dir, const std::optional<std::string>& task_log_dir,
                                     const std::optional<std::string>& submit_dir, std::uint32_t job_id);

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
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES as Slurm set it
  std::optional<std::string> task_log_dir;     // MGPR_LOG_DIR already in the environment
  std::optional<std::string> submit_dir;       // SLURM_SUBMIT_DIR
  std::optional<std::filesystem::path> progress_dir;  // when the watchdog reads reports
};

using Environment = std::vector<std::pair<std::string, std::string>>;

// The variables to set in the task, in a stable order (see docs/spank.md).
Environment task_environment(const TaskFacts& facts, const StepSettings& settings);

}  // namespace mgpr::spank
