#include "slurm_state.hpp"

#include <memory>

extern "C" {
#include <slurm/slurm.h>
}

namespace mgpr::spank {
namespace {

struct JobInfoFree {
  void operator()(job_info_msg_t* message) const { slurm_free_job_info_msg(message); }
};
struct StepInfoFree {
  void operator()(job_step_info_response_msg_t* message) const { slurm_free_job_step_info_response_msg(message); }
};

bool still_running(std::uint32_t state) {
  // COMPLETING: the job is ending (its epilog runs); REQUEUE: it is being requeued.
  return (state & JOB_STATE_BASE) == JOB_RUNNING && (state & (JOB_COMPLETING | JOB_REQUEUE)) == 0;
}

}  // namespace

std::optional<bool> slurm_ends_step(std::uint32_t job_id, std::uint32_t step_id) {
  job_info_msg_t* jobs_raw = nullptr;
  if (slurm_load_job(&jobs_raw, job_id, SHOW_ALL) != SLURM_SUCCESS) return std::nullopt;
  const std::unique_ptr<job_info_msg_t, JobInfoFree> jobs(jobs_raw);
  bool job_found = false;
  for (std::uint32_t i = 0; jobs && i < jobs->record_count; ++i) {
    if (jobs->job_array[i].job_id != job_id) continue;
    job_found = true;
    if (!still_running(jobs->job_array[i].job_state)) return true;
  }
  if (!job_found) return true;

  job_step_info_response_msg_t* steps_raw = nullptr;
  if (slurm_get_job_steps(0, job_id, step_id, &steps_raw, SHOW_ALL) != SLURM_SUCCESS) return std::nullopt;
  const std::unique_ptr<job_step_info_response_msg_t, StepInfoFree> steps(steps_raw);
  for (std::uint32_t i = 0; steps && i < steps->job_step_count; ++i) {
    const auto& step = steps->job_steps[i];
    if (step.step_id.step_id == step_id) return !still_running(step.state);
  }
  return true;  // slurmctld no longer knows the step: it is ending
}

}  // namespace mgpr::spank
