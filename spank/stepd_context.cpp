#include "stepd_context.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <array>

#include "diagnoses.hpp"
#include "geometry.hpp"
#include "log.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "options.hpp"
#include "spank_items.hpp"
#include "task_environment.hpp"

namespace mgpr::spank {
namespace {

// A refused step's tasks exit with this code, the project's code for a usage error.
constexpr int kRefusedExitCode = 2;

// What user_init decided for this node. The tasks are forked from this slurmstepd
// after user_init, so task_init (in each task's process) inherits it.
struct NodeDecision {
  bool wired = false;    // --mgpr is on and this is a real srun step
  bool refused = false;  // the geometry check refused the step
};

NodeDecision& node_decision() {
  static NodeDecision decision;
  return decision;
}

StepSettings current_settings() { return resolve_settings(step_options(), plugin_args()); }

template <class T>
T required(const std::optional<T>& value, const char* what) {
  if (!value) throw UsageError(fmt::format("Slurm did not provide {}", what));
  return *value;
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "this node";
  return name.data();
}

std::filesystem::path job_log_dir(const SpankItems& items, const StepSettings& settings, std::uint32_t job_id) {
  return choose_log_dir(settings.log_dir, items.getenv(env::kLogDir), items.getenv(env::kSlurmSubmitDir), job_id);
}

// The user has the message on srun's stderr already; the file keeps it for mgpr-logs.
// Failing to write it must not hide the finding itself, so it only adds a note.
void record_diagnosis(const std::filesystem::path& log_dir, const std::string& message) {
  try {
    append_diagnosis(log_dir, message);
  } catch (const std::exception& error) {
    log_error("could not record the diagnosis in {}: {}", log_dir.string(), error.what());
  }
}

TaskFacts read_task_facts(const SpankItems& items) {
  TaskFacts facts;
  facts.job_id = required(items.job_id(), "the job id (S_JOB_ID)");
  facts.step_id = required(items.step_id(), "the step id (S_JOB_STEPID)");
  facts.rank = static_cast<int>(required(items.task_global_id(), "the task's global id (S_TASK_GLOBAL_ID)"));
  facts.world_size = static_cast<int>(required(items.total_task_count(), "the task count (S_JOB_TOTAL_TASK_COUNT)"));
  facts.local_rank = required(items.task_local_id(), "the task's local id (S_TASK_ID)");
  facts.local_world_size =
      static_cast<int>(required(items.local_task_count(), "the local task count (S_JOB_LOCAL_TASK_COUNT)"));
  facts.node_rank = static_cast<int>(required(items.node_id(), "the node id (S_JOB_NODEID)"));
  const auto node_list = required(items.getenv(env::kSlurmStepNodeList), env::kSlurmStepNodeList);
  const auto master = first_host(node_list);
  if (!master) throw UsageError(fmt::format("{}='{}' names no host", env::kSlurmStepNodeList, node_list));
  facts.master_addr = *master;
  facts.visible_devices = items.getenv(env::kCudaVisibleDevices);
  facts.task_log_dir = items.getenv(env::kLogDir);
  facts.submit_dir = items.getenv(env::kSlurmSubmitDir);
  return facts;
}

}  // namespace

int stepd_user_init(spank_t spank) {
  const StepSettings settings = current_settings();
  if (!settings.enabled) return 0;
  const SpankItems items(spank);
  const auto step_id = required(items.step_id(), "the step id (S_JOB_STEPID)");
  if (!is_rank_step(step_id)) return 0;
  node_decision().wired = true;

  NodeShape shape;
  shape.job_id = required(items.job_id(), "the job id (S_JOB_ID)");
  shape.step_id = step_id;
  shape.host = host_name();
  shape.local_tasks =
      static_cast<int>(required(items.local_task_count(), "the local task count (S_JOB_LOCAL_TASK_COUNT)"));
  shape.gpus = count_step_gpus(items.getenv(env::kSlurmStepGpus));
  const auto finding = check_geometry(shape, settings.bind, settings.strict);
  if (finding.verdict == Verdict::kRun) return 0;

  // slurm_error from slurmstepd reaches srun's stderr (and a batch job's -e file).
  log_error("{}", finding.message);
  record_diagnosis(job_log_dir(items, settings, shape.job_id), finding.message);
  // Returning an error here would not do: Slurm 22.05 then fails the launch but srun
  // still exits 0, and an `optional` plugin's errors are ignored altogether. The tasks
  // end themselves in task_init instead.
  node_decision().refused = finding.verdict == Verdict::kRefuse;
  return 0;
}

int stepd_task_init(spank_t spank) {
  const auto& decision = node_decision();
  if (!decision.wired) return 0;
  if (decision.refused) {
    // This is the task's own process, forked for the user's program and not yet
    // exec'd: ending it here means the program never starts and srun exits non-zero,
    // whether plugstack.conf marks the plugin required or optional.
    ::_exit(kRefusedExitCode);
  }
  const SpankItems items(spank);
  const auto environment = task_environment(read_task_facts(items), current_settings());
  for (const auto& [name, value] : environment) items.setenv(name, value);
  return 0;
}

}  // namespace mgpr::spank
