#pragma once
// How ranks of one run find each other and talk: a c10d TCPStore for rendezvous and
// shared counters, Gloo for CPU collectives, NCCL (its C API) for GPU collectives.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mgpr/env_names.hpp"

namespace mgpr::runtime {

// What rank 0's peer watch knew of a rank it lost: its host, why, and when (Unix seconds).
struct LostPeer {
  std::string host;
  std::string why;
  double unix_s = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world_size() const = 0;
  virtual void barrier() = 0;
  // Every rank's bytes, indexed by rank (variable sizes allowed).
  virtual std::vector<std::string> all_gather(const std::string& bytes) = 0;
  // Atomically adds `delta` to a counter shared by all ranks and returns the new value
  // (the store's add). Thread-safe.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  // The counters under `keys`, each made by an add before: one request where the store
  // can answer several keys at once (the writer's poll of every rank's mail). Thread-safe.
  virtual std::vector<std::int64_t> counters(const std::vector<std::string>& keys) {
    std::vector<std::int64_t> values;
    for (const auto& key : keys) values.push_back(add(key, 0));
    return values;
  }
  // A value on the store under `key` (stream/store_mail.hpp's messages). Thread-safe.
  virtual void put(const std::string& key, const std::string& bytes) = 0;
  // The value under `key`, which must have been put, removed from the store. Thread-safe.
  virtual std::string take(const std::string& key) = 0;
  // The value under `key` removed from the store, or nullopt where none was put.
  virtual std::optional<std::string> take_if_set(const std::string& key) = 0;
  // Throws IoError naming the rank the run lost and why, once the peer watch knows of one
  // (peer_watch.hpp): the run cannot finish, so nobody should compute on, nor hold
  // results, for it. Thread-safe and cheap (it reads what the watch found); a run of one
  // rank has nobody to lose.
  virtual void check_peers() {}
  // check_peers(), once the watch has looked again (at most a second): for a loop ended
  // by a stop, which the launcher sends as soon as a peer dies.
  virtual void check_peers_after_a_look() { check_peers(); }
  // On rank 0, once check_peers threw: the ranks the watch found lost.
  [[nodiscard]] virtual std::vector<int> lost_ranks() const { return {}; }
  // On rank 0: what its watch knew of lost rank `rank` (empty where it knew nothing).
  [[nodiscard]] virtual LostPeer lost_peer(int rank) const {
    (void)rank;
    return {};
  }
  // This rank's requests to the run's store so far, by the key table's row
  // (distributed/store_traffic.hpp); empty for a run of one rank, which has no store.
  [[nodiscard]] virtual std::map<std::string, std::int64_t> store_requests() const { return {}; }
};

// Passes every call to `inner`: the base of a communicator that watches some calls and
// changes none (bench/store times each request; tests count them).
class ForwardingCommunicator : public Communicator {
 public:
  explicit ForwardingCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] int rank() const override { return inner_->rank(); }
  [[nodiscard]] int world_size() const override { return inner_->world_size(); }
  void barrier() override { inner_->barrier(); }
  std::vector<std::string> all_gather(const std::string& bytes) override { return inner_->all_gather(bytes); }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return inner_->add(key, delta); }
  std::vector<std::int64_t> counters(const std::vector<std::string>& keys) override { return inner_->counters(keys); }
  void put(const std::string& key, const std::string& bytes) override { inner_->put(key, bytes); }
  std::string take(const std::string& key) override { return inner_->take(key); }
  std::optional<std::string> take_if_set(const std::string& key) override { return inner_->take_if_set(key); }
  void check_peers() override { inner_->check_peers(); }
  void check_peers_after_a_look() override { inner_->check_peers_after_a_look(); }
  [[nodiscard]] std::vector<int> lost_ranks() const override { return inner_->lost_ranks(); }
  [[nodiscard]] LostPeer lost_peer(int rank) const override { return inner_->lost_peer(rank); }
  [[nodiscard]] std::map<std::string, std::int64_t> store_requests() const override { return inner_->store_requests(); }

 private:
  std::unique_ptr<Communicator> inner_;
};

struct RendezvousOptions {
  // How long rank 0 waits for every rank to arrive, and the others for rank 0's store.
  std::chrono::seconds timeout{300};
  // After rendezvous every rank beats on the store once a second, and before each
  // collective waits on the store until all have come, naming a rank whose beat stopped
  // for this long (hung, stopped, frozen node) instead of waiting in the collective.
  std::chrono::seconds peer_timeout{120};
  // How long one collective itself may take once every rank has come to it.
  std::chrono::seconds collective_timeout{300};
  bool use_gpu = false;  // NCCL for collectives (when built with it) instead of Gloo
  int device_index = 0;
  // on_rank_loss=continue: a rank other than rank 0 lost is named and the run goes on
  // without it (the live ranks do again what it held); the collectives go through the store,
  // among the ranks alive, as rank 0 counts them (live_gather.hpp).
  bool survive_rank_loss = false;
};

// Joins the run described by `ranks` (world_size 1: no networking at all). Throws
// UsageError with a diagnosis naming the ranks that never came when the timeout passes;
// after it, a collective throws IoError naming a rank that stopped beating (peer_timeout);
// every rank that still reaches rank 0's store gets the same diagnosis. Creates this
// rank's MGPR_PROGRESS_FILE (Heartbeat::arrived) as it reaches the rendezvous, so
// the plugin's watchdog names the same missing ranks. Destroying the communicator of a
// run of several ranks waits (up to `timeout`) until every rank has destroyed its own,
// because rank 0 serves the store the others' add() still uses.
// `early`, where given, is rank 0's store from serve_store_early.
class EarlyStore;
std::unique_ptr<Communicator> join_run(const RankEnvironment& ranks, const RendezvousOptions& options,
                                       const std::shared_ptr<EarlyStore>& early = {});

// Rank 0 serves the run's store before its own slow preparation (model load, the
// one-tile check), so the other ranks find it listening when they come: a c10d client
// that finds no server waits up to a second before it tries again (0.58 s of a two-rank
// run's start, docs/benchmarks.md). Null on the other ranks and for a single rank. It
// waits for nobody; a port already taken is refused here as join_run would refuse it.
// Called again in the same process while the first store lives (mgpr's main serves it
// for the frozen inputs, run_rank asks again), it returns that store.
std::shared_ptr<EarlyStore> serve_store_early(const RankEnvironment& ranks, const RendezvousOptions& options);

// One value every rank must hold alike, made once (rank0_value.hpp): rank 0 calls `make`
// and publishes its bytes on the run's store (`early`: serve_store_early's, which rank 0
// must hold until the rendezvous, as the others may come for the value late), the
// other ranks wait for them (up to options.timeout and a margin) and never call `make`.
// A UsageError of rank 0's `make` is thrown on every rank with the same message. World
// size 1: `make`, no networking.
std::string share_from_rank0(const RankEnvironment& ranks, const RendezvousOptions& options,
                             const std::shared_ptr<EarlyStore>& early, const std::string& key,
                             const std::function<std::string()>& make);

// Before the model loads on a GPU run of several ranks: claims this rank's GPU (`uuid`,
// cuda_backend::device_uuid) on the run's store, connecting to it early on the ranks
// other than 0. A rank whose GPU another rank claimed first throws UsageError naming
// both ranks, the host and the GPU, with the fix; rank 0 then gives every rank that
// reason at rendezvous. The other ranks claim only after rank 0 has, so the rank refused
// is never rank 0, whose store every rank needs to hear why. Nothing for a run of one.
void refuse_shared_gpu(const RankEnvironment& ranks, const RendezvousOptions& options,
                       const std::shared_ptr<EarlyStore>& early, const std::string& uuid);

// The world_size-1 communicator: add() on an in-process counter, collectives trivial.
std::unique_ptr<Communicator> make_local_communicator();

}  // namespace mgpr::runtime
