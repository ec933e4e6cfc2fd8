#pragma once
// How ranks of one run find each other and talk: a c10d TCPStore for rendezvous and
// shared counters, Gloo for CPU collectives, NCCL (its C API) for GPU collectives.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mgpr/env_names.hpp"

namespace mgpr::runtime {

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
};

struct RendezvousOptions {
  std::chrono::seconds timeout{300};
  bool use_gpu = false;  // NCCL for collectives (when built with it) instead of Gloo
  int device_index = 0;
};

// Joins the run described by `ranks` (world_size 1: no networking at all). Throws
// UsageError with a diagnosis naming the ranks that never came when the timeout passes.
std::unique_ptr<Communicator> join_run(const RankEnvironment& ranks, const RendezvousOptions& options);

}  // namespace mgpr::runtime
