#pragma once
// The --mgpr* options users give srun, sbatch and salloc, and the values they chose.
#include "slurm_api.hpp"

#include <optional>
#include <string>

#include "plugin_args.hpp"

namespace mgpr::spank {

struct StepOptions {
  bool enabled = false;
  std::string config_path;
  std::optional<int> rendezvous_timeout_s;
  std::optional<int> stall_timeout_s;
  std::optional<Bind> bind;
  std::optional<int> port;
};

// Filled by the option callbacks; they may run twice in slurmstepd, so each callback
// only assigns and stays idempotent.
StepOptions& step_options();

// Registers every option; through spank_option_register (not a static table) so they
// also reach sbatch and salloc, where Slurm 22.05 ignores a static table.
int register_options(spank_t spank);

}  // namespace mgpr::spank
