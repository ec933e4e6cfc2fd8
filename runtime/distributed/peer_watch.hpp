#pragma once
// After rendezvous, how a rank knows its peers are alive. Ranks reach a collective at
// different times (a slower peer, rank 0 writing the outputs before the report), so
// waiting inside Gloo or NCCL would make a hung or stopped peer cost the collective's
// whole timeout and name nobody. Instead every rank beats on the store once a second,
// and before each collective waits on the store until all have come, naming by rank and
// host any rank whose beat stopped for peer_timeout (docs/runtime-distributed.md).
// While the tiles run, rank 0 watches every beat and every rank's line (peer_lines.hpp)
// and puts the first loss on the store, where the others read it once a second; the
// others watch their line to rank 0. The tile loop and rank 0's writer ask check(), so
// nobody computes on, nor holds results, for a run that is already lost.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/collectives.hpp"
#include "distributed/communicator.hpp"
#include "distributed/peer_lines.hpp"

namespace mgpr::runtime {

// What the watch needs of the run's store; errors are thrown with plain messages.
class PeerStore {
 public:
  virtual ~PeerStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  virtual bool check(const std::string& key) = 0;
  // The value under `key`, which must be set.
  virtual std::string get(const std::string& key) = 0;
  // The counters under `keys`, each made by an add: one request where the store can.
  virtual std::vector<std::int64_t> counters(const std::vector<std::string>& keys) {
    std::vector<std::int64_t> values;
    for (const auto& key : keys) values.push_back(add(key, 0));
    return values;
  }
};

class PeerWatch final : public PeerLiveness {
 public:
  // Starts the beat, the guard and the watch. `hosts` by rank, as each reported at
  // rendezvous; `rank0_address` is where the others reach rank 0 (its store's host).
  // `survive_rank_loss` (on_rank_loss=continue): rank 0 names a rank other than itself
  // that it lost, and goes on (lost_ranks() lists it; check() does not throw for it).
  PeerWatch(PeerStore& store, int rank, std::vector<std::string> hosts, std::chrono::seconds peer_timeout,
            std::string rank0_address, bool survive_rank_loss = false);
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  ~PeerWatch() override;  // stops both threads

  // Before each collective, from the one thread that calls the collectives. Throws
  // IoError naming the ranks that stopped beating, or rank 0 when the store stopped
  // answering.
  void wait_for_peers();

  // From any thread, cheap (what the watch found so far): throws IoError naming the rank
  // the run lost and why, once this rank knows of one.
  void check() const;
  // check(), once the watch has looked at its lines again (at most a second): for a loop
  // that ended on a stop, which the launcher sends the moment a peer dies, often before
  // this rank's watch has seen the death.
  void check_after_a_look() const;
  // Why a call to the store failed with `cause`: the loss known, else rank 0 stopped answering.
  [[nodiscard]] std::string failure_message(const std::string& cause) const;
  // How many ranks this rank knows the run lost (rank 0 knows each; the others, that one was).
  [[nodiscard]] int lost_count() const;
  // The ranks rank 0 found lost, in the order found (empty on the others, which learn
  // only that one was).
  [[nodiscard]] std::vector<int> lost_ranks() const;
  [[nodiscard]] LostPeer lost_peer(int rank) const;
  // Ends the watch before the rank leaves. In order, its line says goodbye; a rank that
  // fails leaves without one, and rank 0 learns at once that the run is lost.
  void stop(bool in_order);

  // For a backend's overdue collective (NCCL's deadline), from the same thread: look
  // samples every peer's beat; stopped names those whose beat has not moved for a few
  // beats. A store that fails to answer is left to the guard.
  void look() override;
  std::vector<int> stopped() override;

 private:
  void beat(const std::stop_token& stop);
  void guard(const std::stop_token& stop);
  void watch(const std::stop_token& stop);
  void watch_every_rank(const std::stop_token& stop);  // rank 0
  void watch_rank0(const std::stop_token& stop);       // the others
  std::unique_ptr<Rank0Lines> listen_for_lines();
  std::unique_ptr<LineToRank0> line_to_rank0(std::chrono::steady_clock::time_point given_up,
                                             const std::stop_token& stop, std::chrono::milliseconds poll);
  // The first loss found wins; rank 0 puts it on the store for the others.
  void record_loss(const std::vector<int>& ranks, const std::string& why);
  [[nodiscard]] std::vector<std::pair<int, std::string>> with_hosts(const std::vector<int>& ranks) const;
  [[nodiscard]] LostPeer lost_peer_now(int rank, const std::string& why) const;

  PeerStore& store_;
  int rank_;
  int world_size_;
  std::vector<std::string> hosts_;
  std::chrono::seconds peer_timeout_;
  bool survive_rank_loss_;
  int collectives_started_ = 0;
  // look()'s record: each peer's last beat seen and since when it has not moved.
  std::vector<std::int64_t> seen_beats_;
  std::vector<std::chrono::steady_clock::time_point> seen_since_;
  std::atomic<std::int64_t> last_reply_ns_;  // steady clock, when the beat was last answered
  std::atomic<bool> beat_ended_ = false;     // the store is gone: nothing left to guard
  std::string rank0_address_;
  std::unique_ptr<Rank0Lines> lines_;  // rank 0's end of every line
  std::unique_ptr<LineToRank0> line_;  // the others' line to rank 0
  std::atomic<bool> leaving_ = false;  // stop() was called: what ends now is no loss
  std::atomic<bool> in_order_ = false;
  std::atomic<bool> lost_known_ = false;
  std::atomic<std::uint64_t> looks_ = 0;  // how many times the watch has looked at its lines
  mutable std::mutex lost_mutex_;         // guards the two below
  std::string lost_why_;
  int lost_count_ = 0;
  std::vector<int> lost_ranks_;
  std::map<int, LostPeer> lost_peers_;
  bool fenced_ = false;  // rank 0 went on without this rank (on_rank_loss=continue)
  // Last: they use the members above, so they stop before any goes.
  std::jthread beat_;
  std::jthread guard_;
  std::jthread watch_;
};

}  // namespace mgpr::runtime
