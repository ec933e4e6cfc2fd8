#pragma once
// A clean stop on request: Slurm sends SIGUSR2 before walltime (the job template's
// --signal=USR2@120) and SIGTERM on scancel. The first such signal makes the rank stop
// claiming tiles, finish the batch it holds and record it in the resume journal; a
// second one ends the process at once, as it would have without mgpr.
//
// A rank that stopped so with tiles left exits kExitStopped (mgpr/exit_codes.hpp): its
// finished tiles are journaled, and the same command run again (or the job requeued)
// finishes the rest.
#include <exception>

namespace mgpr::runtime {

void install_stop_handlers();
// The signal that asked for the stop, or 0.
int stop_signal();
// A stop that came during a long write (a COG) stops the run like one during the loop
// (every tile is journaled and a rerun writes the outputs again): says so on stderr. Any
// other failure is rethrown.
void say_stop_or_rethrow(const std::exception_ptr& failure);

}  // namespace mgpr::runtime
