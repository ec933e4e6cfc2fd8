#pragma once
// The local context: srun, after the step is created and before its tasks launch.
// Slurm 22.05 tells srun the job and step id and the task count here, but not how tasks
// are placed on nodes or which GPUs they get: the geometry check therefore runs in
// slurmstepd (stepd_context), where both are known.
#include "slurm_api.hpp"

namespace mgpr::spank {

// With srun -v, says what the step will get: ranks, binding, MASTER_PORT.
int srun_local_user_init(spank_t spank);

}  // namespace mgpr::spank
