// A run of several ranks: rendezvous over a c10d TCPStore served by rank 0, then Gloo
// (gloo_collectives) or NCCL collectives. With gloo_collectives.cpp the only files that
// include c10d's headers, which compile slowly; both keep to calls that LibTorch 1.13
// and PyTorch 2.x spell alike.
#include <c10/util/Logging.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <exception>
#include <iostream>
#include <mutex>
#include <thread>

#include "distributed/c10d_store.hpp"
#include "distributed/collectives.hpp"
#include "distributed/communicator.hpp"
#include "distributed/gloo_address.hpp"
#include "distributed/gloo_collectives.hpp"
#include "distributed/heartbeat.hpp"
#include "distributed/live_gather.hpp"
#include "distributed/nccl_checks.hpp"
#include "distributed/peer_watch.hpp"
#include "distributed/rank0_value.hpp"
#include "distributed/rendezvous_diagnoses.hpp"
#include "mgpr/error.hpp"
#include "mgpr/process.hpp"
#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The store's keys (mgpr/store_keys.hpp). kRendezvousRefused: why a rank refused to start
// (refuse_shared_gpu), for rank 0 to pass on as its verdict. kRank0ClaimedGpu: set once
// rank 0 has claimed its GPU; the other ranks claim theirs only after it.
constexpr std::string_view kVerdictOk = "ok";
constexpr auto kPoll = milliseconds(20);

// How long the others wait beyond `timeout` for rank 0's verdict: rank 0 started its own
// clock before they could connect, so its verdict is due within `timeout` of their
// connection; the margin covers the polling and a loaded machine.
constexpr auto kVerdictMargin = std::chrono::seconds(10);
// How long rank 0 keeps its store up after a failed rendezvous so the others read why.
constexpr auto kVerdictLinger = std::chrono::seconds(2);
// The same once the run lost a rank: the others read it within a beat, then leave as
// soon as their loop ends.
constexpr auto kLostLinger = std::chrono::seconds(3);

std::string arrived_key(int rank) { return store_key(StoreKey::kArrivedHost, rank); }

// By rank, as each reported at rendezvous.
std::vector<std::string> hosts_of(SharedStore& store, int world_size) {
  std::vector<std::string> hosts;
  for (int r = 0; r < world_size; ++r) hosts.push_back(store.get(arrived_key(r)));
  return hosts;
}

class StoreCommunicator final : public Communicator {
 public:
  StoreCommunicator(const RankEnvironment& ranks, std::shared_ptr<SharedStore> store, const RendezvousOptions& options)
      : rank_(ranks.rank),
        world_size_(ranks.world_size),
        store_(std::move(store)),
        timeout_(options.timeout),
        peer_store_(*store_),
        survive_rank_loss_(options.survive_rank_loss),
        peers_(peer_store_, ranks.rank, hosts_of(*store_, ranks.world_size), options.peer_timeout, ranks.master_addr,
               options.survive_rank_loss) {}

  ~StoreCommunicator() override {
    collectives_.reset();
    // A rank that leaves in order says so on its line before it counts itself out, so
    // rank 0 never takes it for a rank lost; one that fails leaves without a word.
    const bool in_order = std::uncaught_exceptions() == 0;
    if (rank_ != 0) peers_.stop(in_order);
    try {
      store_->add(store_key(StoreKey::kRanksLeft), 1);
      // Rank 0 serves the store: it stays until the others are done with it, or, failing
      // because the run lost a rank, until the others have read which (the store gone,
      // they could only name rank 0). Failing for another reason, the others see the
      // store go and report it.
      const int lost = peers_.lost_count();
      if (rank_ == 0 && (in_order || lost > 0)) {
        const auto deadline = Clock::now() + (in_order ? timeout_ : kLostLinger);
        while (store_->add(store_key(StoreKey::kRanksLeft), 0) < world_size_ - lost && Clock::now() < deadline)
          std::this_thread::sleep_for(kPoll);
      }
    } catch (const std::exception&) {
      // Rank 0 already gone: nothing left to wait for.
    }
    if (rank_ == 0) peers_.stop(in_order);
  }
  StoreCommunicator(const StoreCommunicator&) = delete;
  StoreCommunicator& operator=(const StoreCommunicator&) = delete;

  void set_collectives(std::unique_ptr<Collectives> collectives) { collectives_ = std::move(collectives); }
  PeerWatch& peers() { return peers_; }

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  void barrier() override {
    const std::lock_guard lock(collective_mutex_);
    if (survive_rank_loss_)
      return (void)gather_among_live(peer_store_, peers_, {rank_, world_size_, ++live_collectives_}, "");
    peers_.wait_for_peers();
    plain_collective([&] { collectives_->barrier(); });
  }
  std::vector<std::string> all_gather(const std::string& bytes) override {
    const std::lock_guard lock(collective_mutex_);
    if (survive_rank_loss_)
      return gather_among_live(peer_store_, peers_, {rank_, world_size_, ++live_collectives_}, bytes);
    peers_.wait_for_peers();
    return plain_collective([&] { return collectives_->all_gather(bytes); });
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    return plain([&] { return store_->add(key, delta); });
  }
  std::vector<std::int64_t> counters(const std::vector<std::string>& keys) override {
    return plain([&] { return store_->counters(keys); });
  }
  void put(const std::string& key, const std::string& bytes) override {
    plain([&] { store_->set(key, bytes); });
  }
  std::string take(const std::string& key) override {
    return plain([&] { return store_->take(key); });
  }
  std::optional<std::string> take_if_set(const std::string& key) override {
    return plain([&] { return store_->check(key) ? std::optional(store_->take(key)) : std::nullopt; });
  }
  void check_peers() override { peers_.check(); }
  void check_peers_after_a_look() override { peers_.check_after_a_look(); }
  [[nodiscard]] std::vector<int> lost_ranks() const override { return peers_.lost_ranks(); }
  [[nodiscard]] LostPeer lost_peer(int rank) const override { return peers_.lost_peer(rank); }
  [[nodiscard]] std::map<std::string, std::int64_t> store_requests() const override {
    return store_->traffic().by_row();
  }

 private:
  // c10's errors carry a C++ backtrace and say nothing of the run: what the peer watch
  // knows says which rank was lost, or that rank 0 stopped answering.
  template <class Call>
  auto plain(const Call& call) const -> decltype(call()) {
    try {
      return call();
    } catch (const c10::Error& error) {
      throw IoError(peers_.failure_message(cause_of(error)));
    }
  }
  // A collective that fails after every rank came to it: a rank lost on the way, or the
  // network between the ranks.
  template <class Call>
  auto plain_collective(const Call& call) const -> decltype(call()) {
    try {
      return call();
    } catch (const c10::Error& error) {
      peers_.check();
      throw IoError(fmt::format("rank {}: a collective with the other ranks failed ({})", rank_, cause_of(error)));
    }
  }

  int rank_;
  int world_size_;
  std::shared_ptr<SharedStore> store_;
  std::chrono::seconds timeout_;
  PlainPeerStore peer_store_;
  bool survive_rank_loss_;
  int live_collectives_ = 0;
  PeerWatch peers_;  // after the store it beats on, so it stops first
  std::mutex collective_mutex_;
  std::unique_ptr<Collectives> collectives_;
};

std::shared_ptr<SharedStore> open_store(const RankEnvironment& ranks, const RendezvousOptions& options,
                                        const std::string& address) {
  c10d::TCPStoreOptions store_options;  // fields assigned one by one: 2.x added more
  store_options.port = static_cast<std::uint16_t>(ranks.master_port);
  store_options.isServer = ranks.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(ranks.world_size);
  store_options.waitWorkers = false;  // its wait gives up silently; ours names who is missing
  store_options.timeout = options.timeout;
  serve_from_classic_loop(store_options);
  try {
    return std::make_shared<SharedStore>(c10::make_intrusive<c10d::TCPStore>(ranks.master_addr, store_options));
  } catch (const std::exception& error) {
    if (ranks.rank == 0) {
      throw UsageError(fmt::format(
          "rendezvous failed: rank 0 could not serve the store at {} ({}). Another program or an earlier run may "
          "hold port {}: choose another with srun --mgpr-port or MASTER_PORT, and check that MASTER_ADDR names "
          "rank 0's own host",
          address, cause_of(error), ranks.master_port));
    }
    throw UsageError(store_unreachable_message(ranks.rank, address, options.timeout, cause_of(error)));
  }
}

// Rank 0's verdict for the others when the run cannot go on, kept up until they read it.
[[noreturn]] void fail_everyone(SharedStore& store, const std::string& message, std::int64_t arrived) {
  store.set(store_key(StoreKey::kRendezvousVerdict), message);
  const auto linger = Clock::now() + kVerdictLinger;
  while (store.add(store_key(StoreKey::kVerdictRead), 0) < arrived - 1 && Clock::now() < linger)
    std::this_thread::sleep_for(kPoll);
  throw UsageError(message);
}

void rank0_rendezvous(SharedStore& store, const RankEnvironment& ranks, const RendezvousOptions& options,
                      const std::string& address, Clock::time_point started) {
  const auto deadline = started + options.timeout;
  for (std::int64_t count = 0;
       (count = store.add(store_key(StoreKey::kArrivedCount), 0)) < ranks.world_size && Clock::now() < deadline;) {
    // A rank that refused to start never comes: every rank is told why at once.
    if (store.check(store_key(StoreKey::kRendezvousRefused)))
      fail_everyone(store, store.get(store_key(StoreKey::kRendezvousRefused)), count);
    std::this_thread::sleep_for(kPoll);
  }
  std::vector<std::optional<std::string>> hosts(static_cast<std::size_t>(ranks.world_size));
  std::int64_t arrived = 0;
  for (int r = 0; r < ranks.world_size; ++r) {
    if (store.check(arrived_key(r))) {
      hosts[static_cast<std::size_t>(r)] = store.get(arrived_key(r));
      ++arrived;
    }
  }
  if (arrived == ranks.world_size) {  // also the rank that came between the count and the check
    store.set(store_key(StoreKey::kRendezvousVerdict), std::string(kVerdictOk));
    return;
  }
  fail_everyone(store, missing_ranks_message(hosts, address, options.timeout), arrived);
}

void other_rank_rendezvous(SharedStore& store, const RankEnvironment& ranks, const RendezvousOptions& options,
                           const std::string& address) {
  const auto waited = options.timeout + kVerdictMargin;
  std::string verdict;
  try {
    store.wait(store_key(StoreKey::kRendezvousVerdict), waited);
    verdict = store.get(store_key(StoreKey::kRendezvousVerdict));
    store.add(store_key(StoreKey::kVerdictRead), 1);
  } catch (const std::exception& error) {
    throw UsageError(store_lost_message(ranks.rank, address, waited, cause_of(error)));
  }
  if (verdict != kVerdictOk) throw UsageError(verdict);
}

std::unique_ptr<Collectives> make_collectives(SharedStore& store, const RankEnvironment& ranks,
                                              const RendezvousOptions& options, PeerLiveness& peers) {
  if (options.use_gpu) {
#ifdef MGPR_HAVE_NCCL
    steer_nccl_interface(ranks.master_addr, ranks.master_port);
    NcclSetup setup;
    setup.rank = ranks.rank;
    setup.world_size = ranks.world_size;
    setup.device_index = options.device_index;
    setup.timeout = options.collective_timeout;
    setup.hosts = hosts_of(store, ranks.world_size);
    setup.peers = &peers;
    return make_nccl_collectives(store, setup);
#else
    if (ranks.rank == 0) {
      std::cerr << "mgpr: this build has no NCCL backend (CUDA or NCCL were not found when it was configured): "
                   "collectives go through Gloo on the CPU; results are the same\n";
    }
#endif
  }
  (void)peers;  // Gloo's collectives run after the peer watch saw every rank come
  try {
    return make_gloo_collectives(store.raw(), ranks, options.collective_timeout);
  } catch (const std::exception& error) {
    throw UsageError(fmt::format(
        "rank {}: the Gloo process group could not connect to the other ranks ({}). The ranks reached the store "
        "but not each other: the address Gloo picked on some host is not reachable from the others. Set "
        "GLOO_SOCKET_IFNAME to the network interface that connects the nodes (e.g. ib0 or eth0)",
        ranks.rank, cause_of(error)));
  }
}

std::string checked_store_address(const RankEnvironment& ranks, const RendezvousOptions& options) {
  if (ranks.master_addr.empty() || ranks.master_port <= 0 || ranks.master_port > 65535) {
    throw UsageError(fmt::format(
        "rank {} of {}: MASTER_ADDR and MASTER_PORT must name rank 0's host and a free port (MASTER_ADDR='{}', "
        "MASTER_PORT={}). Launch with srun --mgpr, which sets both, or export them on every rank",
        ranks.rank, ranks.world_size, ranks.master_addr, ranks.master_port));
  }
  if (options.timeout.count() <= 0) {
    throw UsageError("rendezvous_timeout must be at least 1 second");
  }
  return fmt::format("{}:{}", ranks.master_addr, ranks.master_port);
}

}  // namespace

class EarlyStore {
 public:
  explicit EarlyStore(std::shared_ptr<SharedStore> served) : store(std::move(served)) {}
  const std::shared_ptr<SharedStore> store;
};

std::shared_ptr<EarlyStore> serve_store_early(const RankEnvironment& ranks, const RendezvousOptions& options) {
  if (ranks.world_size <= 1 || ranks.rank != 0) return nullptr;
  // One server per port and process: a second one would find the port taken by the first.
  static std::mutex mutex;
  static std::weak_ptr<EarlyStore> served;
  static int served_port = 0;
  const std::lock_guard lock(mutex);
  if (auto alive = served.lock(); alive && served_port == ranks.master_port) return alive;
  const auto address = checked_store_address(ranks, options);
  auto store = std::make_shared<EarlyStore>(open_store(ranks, options, address));
  served = store;
  served_port = ranks.master_port;
  return store;
}

// A key rank 0 sets before the others may go on, waited for as long as a rendezvous; a
// store gone meanwhile is named as rank 0's, with the address.
template <typename Store>
static void wait_for_rank0(Store& store, const RankEnvironment& ranks, const RendezvousOptions& options,
                           const std::string& address, const std::string& key) {
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(options.timeout + kVerdictMargin);
  try {
    store.wait(key, waited);
  } catch (const std::exception& error) {
    throw UsageError(store_lost_message(ranks.rank, address, waited, cause_of(error)));
  }
}

std::string share_from_rank0(const RankEnvironment& ranks, const RendezvousOptions& options,
                             const std::shared_ptr<EarlyStore>& early, const std::string& key,
                             const std::function<std::string()>& make) {
  if (ranks.world_size <= 1) return make();
  const auto address = checked_store_address(ranks, options);
  // Rank 0's store must outlive this call: the others may come for the value much later.
  if (ranks.rank == 0 && !early) throw std::logic_error("share_from_rank0: rank 0 needs its early store");
  const auto store = early ? early->store : open_store(ranks, options, address);
  // Rank 0 may still be making the value (listing a large folder).
  if (ranks.rank != 0) wait_for_rank0(*store, ranks, options, address, key);
  return value_of_rank0(*store, ranks.rank, ranks.world_size, key, make);
}

std::unique_ptr<Communicator> join_run(const RankEnvironment& ranks, const RendezvousOptions& options,
                                       const std::shared_ptr<EarlyStore>& early) {
  const auto started = Clock::now();
  if (ranks.world_size <= 1) {
    Heartbeat::from_environment().arrived();
    return make_local_communicator();
  }
  const auto address = checked_store_address(ranks, options);
  auto store = early ? early->store : open_store(ranks, options, address);
  store->set(arrived_key(ranks.rank), host_name("unknown-host"));
  store->add(store_key(StoreKey::kArrivedCount), 1);
  // Reported on arrival, not on success, so the watchdog too names only the absent ranks.
  Heartbeat::from_environment().arrived();

  if (ranks.rank == 0) {
    rank0_rendezvous(*store, ranks, options, address, started);
  } else {
    other_rank_rendezvous(*store, ranks, options, address);
  }
  auto communicator = std::make_unique<StoreCommunicator>(ranks, store, options);
  communicator->set_collectives(make_collectives(*store, ranks, options, communicator->peers()));
  // From here on a store call that rank 0 does not answer within peer_timeout fails.
  store->raw()->setTimeout(options.peer_timeout);
  // And a store that fails is named in plain words by the peer watch: c10d's own warning
  // of it (a 2.x TCPStore logs every failed receive) would add c10's C++ stack frames.
  // c10's levels: 0 info, 1 warning, 2 error.
  FLAGS_caffe2_log_level = std::max(FLAGS_caffe2_log_level, 2);
  return communicator;
}

void refuse_shared_gpu(const RankEnvironment& ranks, const RendezvousOptions& options,
                       const std::shared_ptr<EarlyStore>& early, const std::string& uuid) {
  if (ranks.world_size <= 1) return;
  const auto address = checked_store_address(ranks, options);
  const auto store = early ? early->store : open_store(ranks, options, address);
  // Rank 0 claims first, so it is never the rank refused: it stays to give every rank the
  // reason at rendezvous, where a refused rank 0 would leave the others to find its store
  // gone only after their own preparation and the rendezvous timeout.
  if (ranks.rank != 0) wait_for_rank0(*store, ranks, options, address, store_key(StoreKey::kRank0ClaimedGpu));
  // A counter per GPU: the first rank on it waits for nobody, a second one knows at once.
  const auto claimed = store->add(store_key(StoreKey::kGpuClaims, uuid), 1);
  store->set(store_key(StoreKey::kGpuClaimant, uuid, claimed),
             fmt::format("{}\t{}", ranks.rank, host_name("unknown-host")));
  if (ranks.rank == 0) store->set(store_key(StoreKey::kRank0ClaimedGpu), "1");
  if (claimed == 1) return;
  std::vector<GpuClaim> claims;
  for (std::int64_t i = 1; i <= claimed; ++i) {
    const auto text = store->get(store_key(StoreKey::kGpuClaimant, uuid, i));
    const auto tab = text.find('\t');
    claims.push_back({std::stoi(text.substr(0, tab)), text.substr(tab + 1), uuid});
  }
  const auto message = shared_gpu_message(claims).value_or("two ranks claimed one GPU");
  store->set(store_key(StoreKey::kRendezvousRefused), message);
  throw UsageError(message);
}

}  // namespace mgpr::runtime
