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
  return {true, fmt::format("deadlock: step {}.{} on {}: {} did not reach rendezvous within {} s; arrived: {} "
                            "({} of {}). Likely cause: {}. Ending the step",
                            facts.job_id, facts.step_id, facts.host, plural_ranks(missing), facts.rendezvous_timeout_s,
                            rank_list(arrived), arrived.size(), facts.world_size, cause)};
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
  return {true,
          fmt::format("stall: step {}.{} on {}: {} made no progress for {:.0f} s (--mgpr-stall={}). Likely "
                      "cause: a collective waiting for a peer that died or diverged, or a deadlock in the "
                      "program. Ending the step",
                      facts.job_id, facts.step_id, facts.host, plural_ranks(stalled), longest, facts.stall_timeout_s)};
}

}  // namespace

WatchVerdict judge(const WatchFacts& facts) {
  if (facts.rendezvous_timeout_s > 0) {
    if (auto verdict = rendezvous_verdict(facts); verdict.end_step) return verdict;
  }
  if (facts.stall_timeout_s > 0) return stall_verdict(facts);
  return {};
}

bool exit_ends_step(int wait_status) {
  // kExitStopped is a clean stop (SIGUSR2 before walltime): its peers got the same
  // signal and are finishing their batch. Ending the step would send them a second
  // signal, kill them before they journal, and the job would not requeue.
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status) != 0 && WEXITSTATUS(wait_status) != kExitStopped;
  if (!WIFSIGNALED(wait_status)) return false;
  const int signal = WTERMSIG(wait_status);
  return signal != SIGTERM && signal != SIGKILL && signal != SIGINT && signal != SIGHUP;
}

std::string early_exit_message(std::uint32_t job_id, std::uint32_t step_id, const std::string& host, int rank,
                               int wait_status) {
  const std::string how = WIFEXITED(wait_status) ? fmt::format("exited with code {}", WEXITSTATUS(wait_status))
                                                 : fmt::format("was killed by signal {} ({})", WTERMSIG(wait_status),
                                                               ::strsignal(WTERMSIG(wait_status)));
  return fmt::format(
      "rank {} of step {}.{} on {} {}; ending the step so its peers do not wait for it in a "
      "collective",
      rank, job_id, step_id, host, how);
}

}  // namespace mgpr::spank
