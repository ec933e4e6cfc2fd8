// What the peer watch found (peer_watch.hpp): its record of the ranks lost, and what it
// says of them to the rank's calls.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "distributed/peer_watch.hpp"
#include "distributed/rendezvous_diagnoses.hpp"
#include "mgpr/error.hpp"
#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

LostPeer PeerWatch::lost_peer_now(int rank, const std::string& why) const {
  const auto index = static_cast<std::size_t>(rank);
  return {index < hosts_.size() ? hosts_[index] : std::string(), why, unix_now_s()};
}

void PeerWatch::record_loss(const std::vector<int>& ranks, const std::string& why) {
  if (leaving_) return;
  // Rank 0 goes on without the others it loses (a silent rank is found again every
  // second: named once). Losing rank 0 ends the run: it holds the store and the writer.
  if (survive_rank_loss_ && rank_ == 0 && !ranks.empty()) {
    std::vector<int> newly_lost;
    {
      const std::lock_guard lock(lost_mutex_);
      for (const int r : ranks) {
        if (std::find(lost_ranks_.begin(), lost_ranks_.end(), r) != lost_ranks_.end()) continue;
        lost_ranks_.push_back(r);
        newly_lost.push_back(r);
        lost_peers_[r] = lost_peer_now(r, why);
      }
      lost_count_ = static_cast<int>(lost_ranks_.size());
    }
    if (newly_lost.empty()) return;
    std::fprintf(stderr, "mgpr: rank 0: %s; the run goes on without %s (on_rank_loss=continue)\n", why.c_str(),
                 newly_lost.size() == 1 ? "it" : "them");
    std::fflush(stderr);
    // What a rank stopped, not ended, reads when it wakes (beat()).
    for (const int r : newly_lost) {
      try {
        store_.set(store_key(StoreKey::kPeerVerdict, r), "silent for longer than peer_timeout, or ended");
      } catch (const std::exception&) {
        // Rank 0's own store: gone only with rank 0.
      }
    }
    return;
  }
  {
    const std::lock_guard lock(lost_mutex_);
    if (lost_known_) return;
    lost_why_ = why;
    lost_count_ = std::max(1, static_cast<int>(ranks.size()));
    if (rank_ == 0) lost_ranks_ = ranks;
    for (const int r : ranks) lost_peers_[r] = lost_peer_now(r, why);
    lost_known_ = true;
  }
  if (rank_ != 0) return;
  try {
    store_.set(store_key(StoreKey::kPeerLost), why);
  } catch (const std::exception&) {
    // Rank 0's own store: the others then find it gone.
  }
}

std::vector<std::pair<int, std::string>> PeerWatch::with_hosts(const std::vector<int>& ranks) const {
  std::vector<std::pair<int, std::string>> named;
  for (const int r : ranks) named.emplace_back(r, hosts_.at(static_cast<std::size_t>(r)));
  return named;
}

void PeerWatch::check() const {
  if (!lost_known_) return;
  const std::lock_guard lock(lost_mutex_);
  if (fenced_) throw IoError(lost_why_);
  throw IoError(run_lost_message(rank_, lost_why_));
}

void PeerWatch::check_after_a_look() const {
  // Two looks: the one under way may have begun before the death.
  const auto looked = looks_.load() + 2;
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  while (!lost_known_ && looks_.load() < looked && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  check();
}

std::string PeerWatch::failure_message(const std::string& cause) const {
  if (lost_known_) {
    const std::lock_guard lock(lost_mutex_);
    return run_lost_message(rank_, lost_why_);
  }
  if (rank_ == 0) return fmt::format("the run's store, which rank 0 serves, failed ({})", cause);
  return run_lost_message(rank_, rank0_stopped_answering_message(hosts_.front(), rank_, cause));
}

int PeerWatch::lost_count() const {
  const std::lock_guard lock(lost_mutex_);
  return lost_count_;
}

std::vector<int> PeerWatch::lost_ranks() const {
  const std::lock_guard lock(lost_mutex_);
  return lost_ranks_;
}

LostPeer PeerWatch::lost_peer(int rank) const {
  const std::lock_guard lock(lost_mutex_);
  const auto found = lost_peers_.find(rank);
  return found == lost_peers_.end() ? LostPeer{} : found->second;
}

}  // namespace mgpr::runtime
