#pragma once
// The --mgpr* options users give srun, sbatch and salloc, and the values they chose.
#include "slurm_api.hpp"
#include "step_settings.hpp"

namespace mgpr::spank {

// Filled by the option callbacks; they may run twice in slurmstepd, so each callback
// only assigns and stays idempotent.
StepOptions& step_options();

// Registers every option; through spank_option_register (not a static table) so they
// also reach sbatch and salloc, where Slurm 22.05 ignores a static table.
int register_options(spank_t spank);

}  // namespace mgpr::spank
