#pragma once
// After rendezvous, how a rank knows its peers are alive. Ranks reach a collective at
// different times (a slower peer, rank 0 writing the outputs before the report), so
// waiting inside Gloo or NCCL would make a hung or stopped peer cost the collective's
// whole timeout and name nobody. Instead every rank beats on the store once a second,
// and before each collective waits on the store until all have come, naming by rank and
// host any rank whose beat stopped for peer_timeout (docs/runtime-distributed.md).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "distributed/collectives.hpp"

namespace mgpr::runtime {

// What the watch needs of the run's store; errors are thrown with plain messages.
class PeerStore {
 public:
  virtual ~PeerStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  virtual bool check(const std::string& key) = 0;
};

class PeerWatch final : public PeerLiveness {
 public:
  // Starts the beat and the guard. `hosts` by rank, as each reported at rendezvous.
  PeerWatch(PeerStore& store, int rank, std::vector<std::string> hosts, std::chrono::seconds peer_timeout);
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  ~PeerWatch() override;  // stops both threads

  // Before each collective, from the one thread that calls the collectives. Throws
  // IoError naming the ranks that stopped beating, or rank 0 when the store stopped
  // answering.
  void wait_for_peers();

  // For a backend's overdue collective (NCCL's deadline), from the same thread: look
  // samples every peer's beat; stopped names those whose beat has not moved for a few
  // beats. A store that fails to answer is left to the guard.
  void look() override;
  std::vector<int> stopped() override;

 private:
  void beat(const std::stop_token& stop);
  void guard(const std::stop_token& stop);

  PeerStore& store_;
  int rank_;
  int world_size_;
  std::vector<std::string> hosts_;
  std::chrono::seconds peer_timeout_;
  int collectives_started_ = 0;
  // look()'s record: each peer's last beat seen and since when it has not moved.
  std::vector<std::int64_t> seen_beats_;
  std::vector<std::chrono::steady_clock::time_point> seen_since_;
  std::atomic<std::int64_t> last_reply_ns_;  // steady clock, when the beat was last answered
  std::atomic<bool> beat_ended_ = false;     // the store is gone: nothing left to guard
  // Last: they use the members above, so they stop before any goes.
  std::jthread beat_;
  std::jthread guard_;
};

}  // namespace mgpr::runtime
