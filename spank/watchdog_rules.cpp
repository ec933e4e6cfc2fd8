#include "watchdog_rules.hpp"

#include <sys/wait.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "mgpr/exit_codes.hpp"

namespace mgpr::spank {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  return fmt::format("{}", fmt::join(ranks, ","));
}

std::string plural_ranks(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", rank_list(ranks));
}

WatchVerdict rendezvous_verdict(const WatchFacts& facts) {
  std::vector<int> arrived = facts.arrived_elsewhere;
  std::vector<int> missing;
  for (const auto& rank : facts.local) {
    if (rank.arrived) {
      arrived.push_back(rank.rank);
    } else if (!rank.exited) {
      missing.push_back(rank.rank);
    }
  }
  const bool armed = facts.armed_from_start || !arrived.empty();
  if (!armed || missing.empty() || facts.elapsed_s < facts.rendezvous_timeout_s) return {};
  std::sort(arrived.begin(), arrived.end());
  const std::string cause =
      arrived.empty()
          ? "the program never reaches rendezvous, or does not report it through MGPR_PROGRESS_FILE"
          : "the missing ranks hang before rendezvous or crashed without exiting, while the others wait for "
            "them";
  return {
      .end_step = true,
      .message = fmt::format("deadlock: step {}.{} on {}: {} did not reach rendezvous within {} s; arrived: {} "
                             "({} of {}). Likely cause: {}. Ending the step",
                             facts.job_id, facts.step_id, facts.host, plural_ranks(missing), facts.rendezvous_timeout_s,
                             rank_list(arrived), arrived.size(), facts.world_size, cause),
      .left_to_the_run = {}};
}

WatchVerdict stall_verdict(const WatchFacts& facts) {
  const bool all_arrived = std::all_of(facts.local.begin(), facts.local.end(),
                                       [](const RankProgress& rank) { return rank.arrived || rank.exited; });
  if (!all_arrived) return {};
  std::vector<int> stalled;
  double longest = 0;
  for (const auto& rank : facts.local) {
    if (rank.arrived && !rank.exited && !rank.finished && rank.seconds_since_report >= facts.stall_timeout_s) {
      stalled.push_back(rank.rank);
      longest = std::max(longest, rank.seconds_since_report);
    }
  }
  if (stalled.empty()) return {};
  const bool rank_zero_stalled = std::find(stalled.begin(), stalled.end(), 0) != stalled.end();
  if (facts.on_rank_loss == OnRankLoss::kContinue && !rank_zero_stalled) {
    // The runtime's peer watch declares them lost after its peer_timeout and rank 0 does
    // their tiles: ending the step would throw away the run that goes on without them.
    return {.end_step = false,
            .message =
                fmt::format("stall: step {}.{} on {}: {} made no progress for {:.0f} s (--mgpr-stall={}); not ending "
                            "the step (--mgpr-on-rank-loss=continue): the run goes on without {}",
                            facts.job_id, facts.step_id, facts.host, plural_ranks(stalled), longest,
                            facts.stall_timeout_s, stalled.size() == 1 ? "it" : "them"),
            .left_to_the_run = stalled};
  }
  return {.end_step = true,
          .message = fmt::format("stall: step {}.{} on {}: {} made no progress for {:.0f} s (--mgpr-stall={}). Likely "
                                 "cause: a collective waiting for a peer that died or diverged, or a deadlock in the "
                                 "program. Ending the step",
                                 facts.job_id, facts.step_id, facts.host, plural_ranks(stalled), longest,
                                 facts.stall_timeout_s),
          .left_to_the_run = {}};
}

}  // namespace

WatchVerdict judge(const WatchFacts& facts) {
  if (facts.rendezvous_timeout_s > 0) {
    if (auto verdict = rendezvous_verdict(facts); verdict.end_step) return verdict;
  }
  if (facts.stall_timeout_s > 0) return stall_verdict(facts);
  return {};
}

namespace {

// "signal 9 (SIGKILL, Killed)": the number, the name a user greps for, the words.
std::string signal_words(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  return abbreviation != nullptr ? fmt::format("signal {} (SIG{}, {})", signal, abbreviation, ::strsignal(signal))
                                 : fmt::format("signal {} ({})", signal, ::strsignal(signal));
}

ExitVerdict ending(const ExitFacts& facts, RankEnding why, const std::string& how, std::string_view advice = {}) {
  const std::string what = fmt::format("rank {} of step {}.{} on {} {}{}{}", facts.rank, facts.job_id, facts.step_id,
                                       facts.host, how, advice.empty() ? "" : ": ", advice);
  // Rank 0 holds the run's store and its writer, and a usage error is every rank's: the
  // run cannot go on without either.
  if (facts.on_rank_loss == OnRankLoss::kContinue && facts.rank != 0 && why != RankEnding::kUsageError) {
    return {.end_step = false,
            .lost = true,
            .ending = why,
            .message = fmt::format("{}; not ending the step (--mgpr-on-rank-loss=continue): the run goes on without it",
                                   what)};
  }
  return {.end_step = true,
          .lost = false,
          .ending = why,
          .message = fmt::format("{}; ending the step so its peers do not wait for it in a collective", what)};
}

}  // namespace

bool is_stop_signal(int signal) {
  return signal == SIGTERM || signal == SIGINT || signal == SIGHUP || signal == SIGUSR2;
}

ExitVerdict judge_exit(const ExitFacts& facts) {
  const int status = facts.wait_status;
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    // kExitStopped is a clean stop (SIGUSR2 before walltime): its peers got the same
    // signal and are finishing their batch. Ending the step would send them a second
    // signal, kill them before they journal, and the job would not requeue.
    if (code == 0 || code == kExitStopped) return {};
    if (code == kExitUsage) {
      return ending(facts, RankEnding::kUsageError, fmt::format("exited with code {}", code),
                    "the run was refused as configured (its message is above)");
    }
    return ending(facts, RankEnding::kFailed, fmt::format("exited with code {}", code));
  }
  if (!WIFSIGNALED(status)) return {};
  const int signal = WTERMSIG(status);
  // Slurm ending the job or step (scancel, walltime, node failure) says so itself; a
  // step told to stop by a signal is not a rank's death either.
  if (is_stop_signal(signal) ||
      (signal == SIGKILL && (facts.slurm_ends_step || facts.step_told_to_stop || facts.step_killed_whole))) {
    return {};
  }
  if (signal == SIGKILL && facts.out_of_memory.value_or(false)) {
    return ending(facts, RankEnding::kOutOfMemory,
                  fmt::format("was killed for memory ({}; the step's memory cgroup recorded an out-of-memory kill)",
                              signal_words(signal)),
                  "lower batch_size or workers, or ask for more memory (--mem)");
  }
  if (signal == SIGKILL) {
    return ending(facts, RankEnding::kKilled,
                  fmt::format("was killed by {} while Slurm was not ending the job", signal_words(signal)),
                  facts.out_of_memory.has_value()
                      ? "the step's memory cgroup recorded no out-of-memory kill, so the kernel's OOM killer for "
                        "the whole node, a node's health check or a kill -9 sent it"
                      : "the kernel's OOM killer (this node has no memory cgroup for the step to tell), a node's "
                        "health check or a kill -9 sent it");
  }
  return ending(facts, RankEnding::kCrashed, fmt::format("was killed by {}", signal_words(signal)));
}

}  // namespace mgpr::spank
