#include "stepd_context.hpp"

#include <pthread.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <memory>
#include <optional>

#include "diagnoses.hpp"
#include "geometry.hpp"
#include "log.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "options.hpp"
#include "progress_folder.hpp"
#include "spank_items.hpp"
#include "task_environment.hpp"
#include "watchdog.hpp"

namespace mgpr::spank {
namespace {

// What user_init decided for this node. The tasks are forked from this slurmstepd
// after user_init, so task_init (in each task's process) inherits it.
struct NodeDecision {
  bool wired = false;                                 // --mgpr is on and this is a real srun step
  bool refused = false;                               // the geometry check refused the step
  std::optional<std::filesystem::path> progress_dir;  // ready for the ranks' reports
};

NodeDecision& node_decision() {
  static NodeDecision decision;
  return decision;
}

// This node's watch over the step, from user_init to exit. Members are destroyed in
// reverse: the watchdog stops before its folder is tidied.
struct NodeWatch {
  std::optional<ProgressFolder> folder;  // when the watchdog reads progress files
  std::optional<Watchdog> watchdog;
};

// The tasks are forked while the watch runs; a forked task that calls exit() (Slurm
// does when a launch fails) would run this static's destructor and join a thread that
// does not exist in the child, so the child drops it unfreed (it is about to exec or
// exit anyway).
std::unique_ptr<NodeWatch>& node_watch() {
  static std::unique_ptr<NodeWatch> watch;
  static const bool registered = [] {
    ::pthread_atfork(nullptr, nullptr, [] { static_cast<void>(node_watch().release()); });
    return true;
  }();
  static_cast<void>(registered);
  return watch;
}

StepSettings current_settings() { return resolve_settings(step_options(), plugstack_config()); }

template <class T>
T required(const std::optional<T>& value, const char* what) {
  if (!value) throw UsageError(fmt::format("Slurm did not provide {}", what));
  return *value;
}

std::filesystem::path step_log_dir(const SpankItems& items, const StepSettings& settings, std::uint32_t job_id) {
  return mgpr::job_log_dir(settings.log_dir, items.getenv(env::kLogDir), items.getenv(env::kSlurmSubmitDir),
                           std::to_string(job_id));
}

// The user has the message on srun's stderr already; the file keeps it for mgpr-logs.
// Failing to write it must not hide the finding itself, so it only adds a note.
std::vector<int> local_ranks(const SpankItems& items, int local_tasks) {
  std::vector<int> ranks;
  for (int local = 0; local < local_tasks; ++local) {
    const auto rank = items.global_id_of_local_task(static_cast<std::uint32_t>(local));
    if (!rank) throw UsageError(fmt::format("Slurm did not provide the global id of local task {}", local));
    ranks.push_back(static_cast<int>(*rank));
  }
  return ranks;
}

// Starts the watchdog before any task runs, with the progress folder made ready for
// the tasks' reports (as the job's user, like everything the plugin writes).
void start_watch(const SpankItems& items, const StepSettings& settings, const NodeShape& shape, const JobUser& user) {
  WatchdogConfig config;
  config.job_id = shape.job_id;
  config.step_id = shape.step_id;
  config.host = shape.host;
  config.world_size = static_cast<int>(required(items.total_task_count(), "the task count (S_JOB_TOTAL_TASK_COUNT)"));
  config.rendezvous_timeout_s = settings.rendezvous_timeout_s;
  config.stall_timeout_s = settings.stall_timeout_s;
  config.armed_from_start = settings.timeout_given;
  config.on_rank_loss = settings.on_rank_loss;
  config.local_ranks = local_ranks(items, shape.local_tasks);
  config.user = user;
  config.log_dir = step_log_dir(items, settings, shape.job_id);
  auto watch = std::make_unique<NodeWatch>();
  if (watches_progress(settings)) {
    const auto folder = progress_dir(config.log_dir, shape.step_id);
    try {
      watch->folder.emplace(user, folder, config.local_ranks);
      config.progress = &*watch->folder;
      node_decision().progress_dir = folder;
    } catch (const std::exception& error) {
      // A read-only log folder must not cost the step: it runs, unwatched for progress.
      log_error("no rendezvous/stall watch for step {}.{}: {}", shape.job_id, shape.step_id, error.what());
      config.rendezvous_timeout_s = 0;
      config.stall_timeout_s = 0;
    }
  }
  watch->watchdog.emplace(std::move(config));
  node_watch() = std::move(watch);
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
  const auto master = slurm_first_host(node_list);
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
  shape.host = host_name("this node");
  shape.local_tasks =
      static_cast<int>(required(items.local_task_count(), "the local task count (S_JOB_LOCAL_TASK_COUNT)"));
  shape.gpus = count_step_gpus(items.getenv(env::kSlurmStepGpus));
  const auto user = required(items.job_user(), "the job's user (S_JOB_UID, S_JOB_GID)");
  const auto finding = check_geometry(shape, settings.bind, settings.strict);
  if (finding.verdict != Verdict::kRun) {
    // slurm_error from slurmstepd reaches srun's stderr (and a batch job's -e file).
    log_error("{}", finding.message);
    record_diagnosis(user, step_log_dir(items, settings, shape.job_id), finding.message);
    // Returning an error here would not do: Slurm 22.05 then fails the launch but srun
    // still exits 0, and an `optional` plugin's errors are ignored altogether. The
    // tasks end themselves in task_init instead.
    node_decision().refused = finding.verdict == Verdict::kRefuse;
    if (node_decision().refused) return 0;
  }
  // For the same reason, a watchdog that cannot start costs the step nothing: it runs
  // unwatched, and says so.
  try {
    start_watch(items, settings, shape, user);
  } catch (const std::exception& error) {
    log_error("no watchdog for step {}.{}: {}", shape.job_id, shape.step_id, error.what());
  }
  return 0;
}

int stepd_task_init(spank_t spank) {
  const auto& decision = node_decision();
  if (!decision.wired) return 0;
  if (decision.refused) {
    // This is the task's own process, forked for the user's program and not yet
    // exec'd: ending it here means the program never starts and srun exits non-zero,
    // whether plugstack.conf marks the plugin required or optional.
    ::_exit(kExitUsage);  // a refused step: the project's code for a usage error
  }
  const SpankItems items(spank);
  auto facts = read_task_facts(items);
  facts.progress_dir = decision.progress_dir;
  const auto environment = task_environment(facts, current_settings());
  for (const auto& [name, value] : environment) items.setenv(name, value);
  return 0;
}

int stepd_task_exit(spank_t spank) {
  const auto& watch = node_watch();
  if (!watch || !watch->watchdog) return 0;
  const SpankItems items(spank);
  const auto rank = items.task_global_id();
  const auto status = items.task_exit_status();
  if (rank && status) watch->watchdog->task_exited(static_cast<int>(*rank), *status);
  return 0;
}

int stepd_exit(spank_t /*spank*/) {
  node_watch().reset();
  return 0;
}

}  // namespace mgpr::spank
