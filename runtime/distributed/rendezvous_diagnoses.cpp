#include "distributed/rendezvous_diagnoses.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace mgpr::runtime {

std::string format_rank_list(const std::vector<int>& sorted_ranks) {
  std::string out;
  for (std::size_t i = 0; i < sorted_ranks.size();) {
    std::size_t j = i;
    while (j + 1 < sorted_ranks.size() && sorted_ranks[j + 1] == sorted_ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", sorted_ranks[i]) : fmt::format("{}-{}", sorted_ranks[i], sorted_ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string missing_ranks_message(const std::vector<std::optional<std::string>>& hosts_by_rank,
                                  const std::string& store_address, std::chrono::seconds timeout) {
  std::vector<int> missing;
  std::map<std::string, std::vector<int>> arrived_by_host;  // sorted, so the message is stable
  for (std::size_t r = 0; r < hosts_by_rank.size(); ++r) {
    if (hosts_by_rank[r]) {
      arrived_by_host[*hosts_by_rank[r]].push_back(static_cast<int>(r));
    } else {
      missing.push_back(static_cast<int>(r));
    }
  }
  std::string arrived;
  for (const auto& [host, ranks] : arrived_by_host) {
    if (!arrived.empty()) arrived += "; ";
    arrived += fmt::format("{} {} on {}", ranks.size() == 1 ? "rank" : "ranks", format_rank_list(ranks), host);
  }
  const std::size_t world = hosts_by_rank.size();
  const bool one = missing.size() == 1;
  return fmt::format(
      "rendezvous failed: {} {} of {} never reached rank 0's store at {} within {} s (arrived: {}). Likely cause: "
      "{} failed or hung before rendezvous, or {} started with another MASTER_ADDR, MASTER_PORT or WORLD_SIZE; "
      "see {} log. Start all {} ranks (srun --mgpr starts one per GPU), or raise rendezvous_timeout if they start "
      "late",
      one ? "rank" : "ranks", format_rank_list(missing), world, store_address, timeout.count(),
      arrived.empty() ? "none" : arrived, one ? "it" : "they", one ? "it was" : "they were", one ? "its" : "their",
      world);
}

std::string store_unreachable_message(int rank, const std::string& store_address, std::chrono::seconds timeout,
                                      const std::string& cause) {
  return fmt::format(
      "rendezvous failed: rank {} could not reach rank 0 / the store at {} within {} s ({}). Check that rank 0 "
      "started and is still running (see its log), that MASTER_ADDR names rank 0's host and MASTER_PORT is the "
      "same on every rank, or raise rendezvous_timeout if rank 0 starts late",
      rank, store_address, timeout.count(), cause);
}

std::string store_lost_message(int rank, const std::string& store_address, std::chrono::seconds waited,
                               const std::string& cause) {
  return fmt::format(
      "rendezvous failed: rank {} reached rank 0's store at {} but got no verdict from rank 0 within {} s ({}). "
      "Rank 0 likely failed or was stopped: see its log",
      rank, store_address, waited.count(), cause);
}

namespace {

// "rank 1 on a; ranks 3-4 on b": ranks grouped by host, hosts sorted, so the text is stable.
std::string ranks_on_hosts(const std::vector<std::pair<int, std::string>>& ranks_and_hosts) {
  std::map<std::string, std::vector<int>> by_host;
  for (const auto& [rank, host] : ranks_and_hosts) by_host[host].push_back(rank);
  std::string named;
  for (auto& [host, ranks] : by_host) {
    std::sort(ranks.begin(), ranks.end());
    if (!named.empty()) named += "; ";
    named += fmt::format("{} {} on {}", ranks.size() == 1 ? "rank" : "ranks", format_rank_list(ranks), host);
  }
  return named;
}

}  // namespace

std::string lost_peers_message(int rank, const std::vector<std::pair<int, std::string>>& lost, int collective,
                               std::chrono::seconds timeout) {
  const auto named = ranks_on_hosts(lost);
  const bool one = lost.size() == 1;
  return fmt::format(
      "{} showed no sign of life for {} s while rank {} waited for {} at collective {}: {} hung, was stopped "
      "(SIGSTOP, a frozen node) or lost its network. Ending rank {} instead of waiting for the collective's "
      "timeout; see {} log, and raise peer_timeout if ranks may pause this long",
      named, timeout.count(), rank, one ? "it" : "them", collective, one ? "it" : "they", rank, one ? "its" : "their");
}

std::string store_silent_message(int rank, const std::string& rank0_host, std::chrono::seconds timeout,
                                 const std::string& cause) {
  return fmt::format(
      "rank 0 on {}, which serves the run's store, did not answer rank {} within {} s ({}): it hung, was stopped "
      "or failed. Ending rank {}; see rank 0's log, and raise peer_timeout if it may pause this long",
      rank0_host, rank, timeout.count(), cause, rank);
}

std::string ranks_ended_message(const std::vector<std::pair<int, std::string>>& lost) {
  const bool one = lost.size() == 1;
  return fmt::format(
      "{} ended in the middle of the run: {} killed (SIGKILL, the out-of-memory killer), crashed or failed; see {} "
      "log",
      ranks_on_hosts(lost), one ? "it was" : "they were", one ? "its" : "their");
}

std::string ranks_silent_message(const std::vector<std::pair<int, std::string>>& lost, std::chrono::seconds timeout) {
  const bool one = lost.size() == 1;
  return fmt::format(
      "{} showed no sign of life for {} s in the middle of the run: {} hung, {} stopped (SIGSTOP, a frozen node), "
      "{} killed or lost {} network; see {} log, and raise peer_timeout if ranks may pause this long",
      ranks_on_hosts(lost), timeout.count(), one ? "it" : "they", one ? "was" : "were", one ? "was" : "were",
      one ? "its" : "their", one ? "its" : "their");
}

std::string rank0_stopped_answering_message(const std::string& rank0_host, int rank, const std::string& cause) {
  return fmt::format(
      "rank 0 on {}, which serves the run's store, stopped answering rank {} ({}): it was killed (SIGKILL, the "
      "out-of-memory killer), crashed, failed or lost its network; see its log",
      rank0_host, rank, cause);
}

std::string run_lost_message(int rank, const std::string& why) {
  return fmt::format(
      "{}. The run cannot finish without it, so rank {} ends too; every finished tile is journaled, and the same "
      "command run again resumes from them",
      why, rank);
}

}  // namespace mgpr::runtime
