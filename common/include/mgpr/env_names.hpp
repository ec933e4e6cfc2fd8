#pragma once
// The environment the SPANK plugin gives each task and the runtime reads. torchrun's
// names, so programs written for torchrun or Lightning run unchanged under srun --mgpr.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mgpr::env {

inline constexpr const char* kRank = "RANK";
inline constexpr const char* kWorldSize = "WORLD_SIZE";
inline constexpr const char* kLocalRank = "LOCAL_RANK";
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kNodeRank = "NODE_RANK";
inline constexpr const char* kGroupRank = "GROUP_RANK";
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";
inline constexpr const char* kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";

// mgpr's own: where logs and summaries go, the run's config, and the file through
// which a rank reports progress to the plugin's watchdog.
inline constexpr const char* kLogDir = "MGPR_LOG_DIR";
inline constexpr const char* kConfig = "MGPR_CONFIG";
inline constexpr const char* kProgressFile = "MGPR_PROGRESS_FILE";
// The step's --mgpr-on-rank-loss (fail or continue), which the plugin's watchdog acts on:
// the run's on_rank_loss unless the config sets it, and a config that sets the other
// value is refused (the watchdog and the ranks must agree whether a loss ends the run).
inline constexpr const char* kOnRankLoss = "MGPR_ON_RANK_LOSS";
// Set by the local launcher (`mgpr gpus=N` outside Slurm) to its own pid, so each rank
// it starts can follow it: no rank outlives its launcher.
inline constexpr const char* kLauncherPid = "MGPR_LAUNCHER_PID";

// Slurm's own, read as a fallback when a step was launched without --mgpr.
inline constexpr const char* kSlurmJobId = "SLURM_JOB_ID";
inline constexpr const char* kSlurmStepId = "SLURM_STEP_ID";
inline constexpr const char* kSlurmProcId = "SLURM_PROCID";
inline constexpr const char* kSlurmNtasks = "SLURM_NTASKS";
inline constexpr const char* kSlurmLocalId = "SLURM_LOCALID";
inline constexpr const char* kSlurmNodeId = "SLURM_NODEID";
inline constexpr const char* kSlurmCpusPerTask = "SLURM_CPUS_PER_TASK";
// Read by the SPANK plugin in slurmstepd: the step's hosts and GPUs, and where it came from.
inline constexpr const char* kSlurmStepNodeList = "SLURM_STEP_NODELIST";
inline constexpr const char* kSlurmStepGpus = "SLURM_STEP_GPUS";
inline constexpr const char* kSlurmJobNodeList = "SLURM_JOB_NODELIST";
inline constexpr const char* kSlurmNtasksPerNode = "SLURM_NTASKS_PER_NODE";
inline constexpr const char* kSlurmSubmitDir = "SLURM_SUBMIT_DIR";

}  // namespace mgpr::env

namespace mgpr {

// Where this process sits in a distributed run.
struct RankEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;       // empty when not set
  int master_port = 0;           // 0 when not set
  bool from_slurm_only = false;  // ranks came from SLURM_* because the plugin was not active
};

using EnvAssignments = std::vector<std::pair<std::string, std::string>>;

// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK (= the node),
// MASTER_ADDR, MASTER_PORT, in that order: what the plugin gives each task and the
// local launcher each rank, and what rank_environment_from_env reads back.
EnvAssignments torchrun_environment(const RankEnvironment& ranks);

// The step's rendezvous port, within [port_min, port_max]. Deterministic, so every node
// of the step computes the same one without talking to the others; steps of one job
// get consecutive ports, so two steps of a job on one node never share one (until the
// range wraps), and different jobs are spread over the range.
int derive_master_port(std::uint32_t job_id, std::uint32_t step_id, int port_min, int port_max);

// The device a rank keeps out of those its task may use (CUDA_VISIBLE_DEVICES's
// entries). Picks by position, not by value, so it is right whether Slurm wrote global
// indices ("2,3") or cgroups renumbered them ("0,1"). A single device means Slurm
// already bound one per task (--gpus-per-task, --gpu-bind): it is kept. With more ranks
// than devices ranks share devices round-robin. nullopt: no device.
std::optional<std::string> device_for_rank(std::span<const std::string> devices, int local_rank);

// The first host of a Slurm host list ("gpu[03-05,9],cpu1" -> "gpu03"); empty for "".
std::string first_host(std::string_view host_list);

// Reads torchrun-style variables, else Slurm's (then MASTER_ADDR is the step's first
// host and MASTER_PORT, unless set, is derived from the job and step ids); nullopt when neither is present (a
// plain local run). Throws UsageError naming a variable that is set but malformed.
std::optional<RankEnvironment> rank_environment_from_env();

}  // namespace mgpr
