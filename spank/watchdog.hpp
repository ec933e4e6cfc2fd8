#pragma once
// The deadlock and stall watchdog of one node of a step, living in slurmstepd from
// user_init to exit. A thread polls the step's progress files and ends the whole step
// (slurm_kill_job_step, which reaches every node) when watchdog_rules.hpp says so;
// task_exit reports each task's end, and the thread judges it at once: a rank that
// fails or is killed ends the step, with the cause where it can be known (Slurm's own
// ending of the job, an out-of-memory kill in the step's memory cgroup).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "as_job_user.hpp"
#include "progress_folder.hpp"
#include "step_memory.hpp"
#include "watchdog_rules.hpp"

namespace mgpr::spank {

struct WatchdogConfig {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string host;
  int world_size = 0;
  int rendezvous_timeout_s = 0;
  int stall_timeout_s = 0;
  bool armed_from_start = false;
  OnRankLoss on_rank_loss = OnRankLoss::kFail;
  std::vector<int> local_ranks;
  JobUser user;                              // diagnoses are written as this user
  std::filesystem::path log_dir;             // diagnoses.log goes here
  const ProgressFolder* progress = nullptr;  // the ranks' progress files; outlives the watchdog
};

class Watchdog {
 public:
  // Starts the thread: it polls progress files when a rendezvous or stall timeout is
  // set, and turns a SIGTERM the step ignores into SIGKILL.
  explicit Watchdog(WatchdogConfig config);
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog();  // stops the thread; the jthread member joins it

  // From task_exit, in slurmstepd's main thread: reads the step's out-of-memory kills
  // (a few small files) and queues the exit for the thread, which may ask slurmctld
  // about the job (a round trip the main thread must not wait for). The node's last
  // exit waits, a few seconds at most, until every exit is judged: slurmstepd's own
  // messages reach srun through the step's stderr only until it stops forwarding output,
  // which it does once task_exit has run for every task.
  void task_exited(int rank, int wait_status);

 private:
  struct TaskExit {
    int rank = 0;
    int wait_status = 0;
    // The step's out-of-memory kills when the task was reaped: under cgroup v1 the kill
    // is counted in the task's own cgroup, which Slurm may remove soon after.
    std::optional<std::uint64_t> oom_kills;
  };

  void watch(const std::stop_token& stop);
  [[nodiscard]] WatchFacts observe();
  void judge_exits(std::unique_lock<std::mutex>& lock);
  // After a SIGKILL: waits a moment for this node's other ranks, and says whether every
  // one of them was killed too (a step-wide kill, not one rank's death).
  bool every_local_rank_killed(std::unique_lock<std::mutex>& lock);
  // Reports once, then asks Slurm to end the step (SIGTERM, SIGKILL after a grace).
  void end_step(const std::string& message);
  void record_ending(RankEnding ending, int rank) const;
  // Once, for a loss the run survives (on_rank_loss=continue): srun's stderr and the
  // diagnoses file, the step left running.
  void report_loss(const std::string& message) const;
  // Rank 0's exit status under on_rank_loss=continue, for the job script.
  void record_rank_zero_exit(int wait_status) const;
  void signal_step(int signal);

  WatchdogConfig config_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // The step's out-of-memory kills before its tasks ran; a kill after that is theirs.
  std::optional<StepMemory> step_memory_ = StepMemory::of_this_step(config_.step_id);
  std::optional<std::uint64_t> oom_kills_at_start_ = step_memory_ ? step_memory_->oom_kills() : std::nullopt;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::map<int, int> exit_statuses_;      // rank -> wait status; guarded by mutex_
  std::vector<TaskExit> exits_to_judge_;  // guarded by mutex_
  bool told_to_stop_ = false;             // guarded by mutex_
  bool judging_ = false;                  // an exit is being judged with mutex_ released; guarded by mutex_
  std::optional<std::chrono::steady_clock::time_point> ending_since_;  // guarded by mutex_
  std::set<int> reported_stalled_;  // stalled ranks left to the run, already reported; the thread's own
  std::jthread thread_;             // last: it uses every member above
};

}  // namespace mgpr::spank
