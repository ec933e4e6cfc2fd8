#pragma once
// What mgpr-submit asks of Slurm, and the job script that says it.
#include <filesystem>
#include <string>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/gpu_spec.hpp"
#include "template_render.hpp"

namespace mgpr::launcher {

struct SubmitRequest {
  GpuSpec gpus{"", 1};
  int nodes = 1;
  int cpus_per_task = 0;  // 0: derived from the reader workers
  std::string partition, account, qos, constraint;
  std::string time = "01:00:00";
  std::string mem;  // empty: derived from the GPUs per node
  std::string job_name = "mgpr";
  bool exclusive = false;
  std::vector<std::string> sbatch_args;
  std::filesystem::path log_dir;  // absolute
  std::string mgpr_command;       // absolute path of the runtime binary
  std::vector<std::string> srun_options;
  RunConfig config;
};

// The original project's advice: two CPUs per reader worker, for every rank.
int derived_cpus_per_task(const RunConfig& config);
std::string derived_memory(const SubmitRequest& request);

// What to change when sbatch refuses the job, from sbatch's own message.
std::string refusal_hint(std::string_view sbatch_error, const SubmitRequest& request);

// Every placeholder of templates/mgpr.sbatch with its value; throws UsageError for a
// value that cannot go on an #SBATCH line.
TemplateValues script_values(const SubmitRequest& request);

}  // namespace mgpr::launcher
