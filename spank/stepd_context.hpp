#pragma once
// The remote context: slurmstepd on every node of a step. user_init runs once per node
// before any task starts; task_init runs inside each task's process just before it
// execs the user's program.
#include "slurm_api.hpp"

namespace mgpr::spank {

// Checks this node's geometry, reporting a problem to the user and to diagnoses.log;
// starts the node's watchdog for a step that runs.
int stepd_user_init(spank_t spank);

// Gives the task its rank and device environment, or ends a refused step's task before
// the program starts.
int stepd_task_init(spank_t spank);

// In slurmstepd as each task ends: a rank that fails ends the whole step.
int stepd_task_exit(spank_t spank);

// The step is over on this node: stops the watchdog.
int stepd_exit(spank_t spank);

}  // namespace mgpr::spank
