#include "watchdog.hpp"

#include <sys/wait.h>

#include <fmt/format.h>

#include <algorithm>
#include <csignal>

#include "diagnoses.hpp"
#include "log.hpp"
#include "mgpr/log_layout.hpp"
#include "slurm_state.hpp"

extern "C" {
#include <slurm/slurm.h>
}

namespace mgpr::spank {
namespace {

constexpr auto kPollInterval = std::chrono::seconds(1);
// After SIGTERM, the ranks get this long to exit before SIGKILL ends the step for good
// (a rank blocked in a collective may never act on SIGTERM).
constexpr auto kKillGrace = std::chrono::seconds(10);
// A kill of the whole step (scancel of the step, Slurm's SIGKILL after a signal) reaches
// every task of a node within milliseconds; one rank's death leaves the others running.
constexpr auto kStepWideKillWindow = std::chrono::seconds(1);
// How long the node's last task_exit waits for the verdicts: the window above and one
// slurmctld round trip, with room for a busy controller.
constexpr auto kLastExitWait = std::chrono::seconds(5);

bool killed(int wait_status) { return WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL; }

}  // namespace

Watchdog::Watchdog(WatchdogConfig config)
    : config_(std::move(config)), thread_([this](const std::stop_token& stop) { watch(stop); }) {}

Watchdog::~Watchdog() {
  thread_.request_stop();
  wake_.notify_all();
}

void Watchdog::task_exited(int rank, int wait_status) {
  const auto oom_kills = killed(wait_status) && step_memory_ ? step_memory_->oom_kills() : std::nullopt;
  std::unique_lock lock(mutex_);
  exit_statuses_[rank] = wait_status;
  // A single rank has no peer to release.
  if (config_.world_size > 1) exits_to_judge_.push_back({rank, wait_status, oom_kills});
  wake_.notify_all();
  if (exit_statuses_.size() < config_.local_ranks.size()) return;
  // The node's last exit: a verdict printed after this returns may never reach srun.
  wake_.wait_for(lock, kLastExitWait, [this] { return (exits_to_judge_.empty() || ending_since_) && !judging_; });
}

void Watchdog::judge_exits(std::unique_lock<std::mutex>& lock) {
  while (!exits_to_judge_.empty() && !ending_since_) {
    const TaskExit exit = exits_to_judge_.front();
    exits_to_judge_.erase(exits_to_judge_.begin());
    judging_ = true;
    if (WIFSIGNALED(exit.wait_status)) {
      const int signal = WTERMSIG(exit.wait_status);
      if (is_stop_signal(signal)) told_to_stop_ = true;
    }
    ExitFacts facts{.job_id = config_.job_id,
                    .step_id = config_.step_id,
                    .host = config_.host,
                    .rank = exit.rank,
                    .wait_status = exit.wait_status,
                    .step_told_to_stop = told_to_stop_,
                    .out_of_memory = std::nullopt};
    // Only a kill needs the slow facts: this node's other ranks, slurmctld's view and
    // the memory cgroup.
    if (killed(exit.wait_status) && !told_to_stop_) facts.step_killed_whole = every_local_rank_killed(lock);
    lock.unlock();
    if (killed(exit.wait_status)) {
      facts.slurm_ends_step = slurm_ends_step(config_.job_id, config_.step_id).value_or(false);
      if (exit.oom_kills && oom_kills_at_start_) facts.out_of_memory = *exit.oom_kills > *oom_kills_at_start_;
    }
    facts.on_rank_loss = config_.on_rank_loss;
    const auto verdict = judge_exit(facts);
    if (verdict.end_step) {
      record_ending(verdict.ending, exit.rank);
      end_step(verdict.message);
    } else if (verdict.lost) {
      report_loss(verdict.message);
    }
    if (exit.rank == 0 && config_.on_rank_loss == OnRankLoss::kContinue) record_rank_zero_exit(exit.wait_status);
    lock.lock();
    judging_ = false;
    wake_.notify_all();  // the node's last task_exit may be waiting for this verdict
  }
}

bool Watchdog::every_local_rank_killed(std::unique_lock<std::mutex>& lock) {
  if (config_.local_ranks.size() < 2) return false;  // one rank: nothing to compare with
  const auto all_ended = [this] { return exit_statuses_.size() >= config_.local_ranks.size(); };
  wake_.wait_for(lock, kStepWideKillWindow, all_ended);
  if (!all_ended()) return false;
  return std::all_of(exit_statuses_.begin(), exit_statuses_.end(),
                     [](const auto& rank_status) { return killed(rank_status.second); });
}

void Watchdog::watch(const std::stop_token& stop) {
  const bool watch_progress =
      config_.progress != nullptr && (config_.rendezvous_timeout_s > 0 || config_.stall_timeout_s > 0);
  // Nothing may escape a thread: std::terminate would take slurmstepd down with it.
  try {
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
      judge_exits(lock);
      if (ending_since_) {
        if (std::chrono::steady_clock::now() - *ending_since_ >= kKillGrace) {
          lock.unlock();
          signal_step(SIGKILL);
          return;
        }
      } else if (watch_progress) {
        lock.unlock();
        const auto verdict = judge(observe());
        if (verdict.end_step) {
          end_step(verdict.message);
        } else if (!std::includes(reported_stalled_.begin(), reported_stalled_.end(), verdict.left_to_the_run.begin(),
                                  verdict.left_to_the_run.end())) {
          // A rank left to the run is said once, not at every poll while it stays stalled.
          reported_stalled_.insert(verdict.left_to_the_run.begin(), verdict.left_to_the_run.end());
          report_loss(verdict.message);
        }
        lock.lock();
      }
      wake_.wait_for(lock, stop, kPollInterval, [this] { return !exits_to_judge_.empty() && !ending_since_; });
    }
  } catch (const std::exception& error) {
    try {
      log_error("watchdog of step {}.{} stopped: {}", config_.job_id, config_.step_id, error.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

WatchFacts Watchdog::observe() {
  WatchFacts facts;
  facts.job_id = config_.job_id;
  facts.step_id = config_.step_id;
  facts.host = config_.host;
  facts.world_size = config_.world_size;
  facts.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  facts.rendezvous_timeout_s = config_.rendezvous_timeout_s;
  facts.stall_timeout_s = config_.stall_timeout_s;
  facts.armed_from_start = config_.armed_from_start;
  facts.on_rank_loss = config_.on_rank_loss;
  std::set<int> exited;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [rank, status] : exit_statuses_) exited.insert(rank);
  }
  for (const int rank : config_.local_ranks) {
    RankProgress progress{.rank = rank, .exited = exited.contains(rank)};
    if (const auto report = config_.progress->report_of(rank)) {
      progress.arrived = true;
      progress.seconds_since_report = report->seconds_since;
      progress.finished = report->finished;
    }
    facts.local.push_back(progress);
  }
  // Other nodes' ranks show up here only when the log folder is shared.
  for (const int rank : config_.progress->reporting_ranks()) {
    if (std::find(config_.local_ranks.begin(), config_.local_ranks.end(), rank) == config_.local_ranks.end()) {
      facts.arrived_elsewhere.push_back(rank);
    }
  }
  return facts;
}

void Watchdog::end_step(const std::string& message) {
  {
    const std::lock_guard lock(mutex_);
    if (ending_since_) return;
    ending_since_ = std::chrono::steady_clock::now();
  }
  // slurm_error from slurmstepd reaches srun's stderr; the file keeps it for mgpr-logs.
  log_error("{}", message);
  record_diagnosis(config_.user, config_.log_dir, message);
  signal_step(SIGTERM);
}

void Watchdog::record_ending(RankEnding ending, int rank) const {
  // The job script reads these lines after srun to decide whether to requeue.
  guarded("endings", ErrorPrefix::kNone, [&] {
    try {
      append_file_as(config_.user, config_.log_dir, kStepEndingsFile,
                     fmt::format("{} {} {} {}\n", config_.step_id, rank_ending_row(ending).word, rank, config_.host));
    } catch (const std::exception& error) {
      log_error("could not record the step's ending in {}: {}", config_.log_dir.string(), error.what());
    }
  });
}

void Watchdog::report_loss(const std::string& message) const {
  log_error("{}", message);
  record_diagnosis(config_.user, config_.log_dir, message);
}

void Watchdog::record_rank_zero_exit(int wait_status) const {
  const int status = WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
  guarded("rank zero exit", ErrorPrefix::kNone, [&] {
    try {
      append_file_as(config_.user, config_.log_dir, kRankZeroExitFile,
                     fmt::format("{} {} {}\n", config_.step_id, status, config_.host));
    } catch (const std::exception& error) {
      log_error("could not record rank 0's exit status in {}: {}", config_.log_dir.string(), error.what());
    }
  });
}

void Watchdog::signal_step(int signal) {
  if (slurm_kill_job_step(config_.job_id, config_.step_id, static_cast<std::uint16_t>(signal)) != SLURM_SUCCESS) {
    log_error("could not signal step {}.{} ({}): {}", config_.job_id, config_.step_id, signal,
              slurm_strerror(slurm_get_errno()));
  }
}

}  // namespace mgpr::spank
