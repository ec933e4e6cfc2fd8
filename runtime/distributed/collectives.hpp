#pragma once
// The two halves a communicator of several ranks is made of, apart so that the NCCL
// backend needs no c10d header and the GPU tests can build it without a TCPStore.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mgpr::runtime {

// Collectives over bytes; every rank calls them in the same order, from one thread.
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual void barrier() = 0;
  virtual std::vector<std::string> all_gather(const std::string& bytes) = 0;
};

// The little the backends need from the rendezvous store.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` is set (up to the store's timeout) and returns its value.
  virtual std::string get(const std::string& key) = 0;
  // Whether `key` is set, without waiting: what a wait with a deadline polls.
  virtual bool check(const std::string& key) = 0;
};

// What the run knows of its peers' beats (peer_watch.hpp), so an overdue collective
// names the rank that stopped rather than only the rank that waited.
class PeerLiveness {
 public:
  virtual ~PeerLiveness() = default;
  // Samples every peer's beat; called about once a second while a collective is overdue.
  virtual void look() = 0;
  // The peers whose beat has not moved across the recent looks.
  virtual std::vector<int> stopped() = 0;
};

struct NcclSetup {
  int rank = 0;
  int world_size = 1;
  int device_index = 0;  // of the CUDA devices this process sees
  // The deadline of the set-up and of every collective (RendezvousOptions::collective_timeout).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::vector<std::string> hosts;  // by rank, to name them in messages; may be empty
  PeerLiveness* peers = nullptr;   // may be null: ranks are then named only by arrival
};

#ifdef MGPR_HAVE_NCCL
// NCCL through its C API, in its non-blocking mode so that creation and every
// collective have a deadline (then ncclCommAbort, and IoError naming the ranks that held
// it up). Every rank publishes its NCCL version under `nccl/version/<rank>`; rank 0
// compares them (UsageError on a mismatch, on every rank) and shares its unique id under
// `nccl/setup`. Throws std::runtime_error naming a failing CUDA or NCCL call.
std::unique_ptr<Collectives> make_nccl_collectives(KeyValueStore& store, const NcclSetup& setup);
// ncclGetVersion's code for the NCCL this process loaded (22809 for 2.28.9).
int linked_nccl_version();
#endif

}  // namespace mgpr::runtime
