#pragma once
// The diagnoses of ranks that do not meet, at rendezvous and at a collective after it,
// apart from the networking so they are unit-tested.
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mgpr::runtime {

// "1, 3-5, 7": rank numbers, consecutive ones as ranges, so a large world stays readable.
std::string format_rank_list(const std::vector<int>& sorted_ranks);

// Rank 0's diagnosis once the timeout passed: `hosts_by_rank[r]` is the host rank r
// reported, nullopt for a rank that never came. Names the missing ranks and where the
// others run.
std::string missing_ranks_message(const std::vector<std::optional<std::string>>& hosts_by_rank,
                                  const std::string& store_address, std::chrono::seconds timeout);

// A rank other than 0 that could not reach rank 0's store (never started, wrong
// address or port, firewall).
std::string store_unreachable_message(int rank, const std::string& store_address, std::chrono::seconds timeout,
                                      const std::string& cause);

// A rank that reached the store but rank 0 went away or said nothing in time.
std::string store_lost_message(int rank, const std::string& store_address, std::chrono::seconds waited,
                               const std::string& cause);

// After rendezvous: `lost` (rank, host) showed no sign of life for `timeout` while
// `rank` waited for them at collective number `collective`.
std::string lost_peers_message(int rank, const std::vector<std::pair<int, std::string>>& lost, int collective,
                               std::chrono::seconds timeout);

// After rendezvous: rank 0's store, which every rank's beat goes through, stopped answering.
std::string store_silent_message(int rank, const std::string& rank0_host, std::chrono::seconds timeout,
                                 const std::string& cause);

// While the tiles run: `lost` (rank, host) ended, their line to rank 0 closed without a
// goodbye (peer_lines.hpp).
std::string ranks_ended_message(const std::vector<std::pair<int, std::string>>& lost);

// While the tiles run: the beats of `lost` (rank, host) have not moved for `timeout`.
std::string ranks_silent_message(const std::vector<std::pair<int, std::string>>& lost, std::chrono::seconds timeout);

// While the tiles run: rank 0's store failed a call of `rank`, or its line closed.
std::string rank0_stopped_answering_message(const std::string& rank0_host, int rank, const std::string& cause);

// What `rank` says as it ends because the run lost a rank (`why`, one of the above).
std::string run_lost_message(int rank, const std::string& why);

}  // namespace mgpr::runtime
