#pragma once
// What slurmctld says of a running step, asked from slurmstepd when one of its ranks
// dies by a signal: is Slurm itself ending the job or the step (scancel, the walltime, a
// node failure, a preemption)? Then the death is Slurm's doing, which Slurm reports.
#include <cstdint>
#include <optional>

namespace mgpr::spank {

// true when the job is no longer running or is completing, or the step is no longer
// running or no longer known; false when both are running; nullopt when slurmctld
// could not be asked (the death is then judged as if Slurm were not ending it).
std::optional<bool> slurm_ends_step(std::uint32_t job_id, std::uint32_t step_id);

}  // namespace mgpr::spank
