#pragma once
// The two halves a communicator of several ranks is made of, apart so that the NCCL
// backend needs no c10d header and the GPU tests can build it without a TCPStore.
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
};

#ifdef MGPR_HAVE_NCCL
// NCCL through its C API on CUDA device `device_index` (of those this process sees).
// Rank 0 makes the unique id and shares it under `nccl/id`. Throws std::runtime_error
// naming the failing CUDA or NCCL call.
std::unique_ptr<Collectives> make_nccl_collectives(KeyValueStore& store, int rank, int world_size, int device_index);
#endif

}  // namespace mgpr::runtime
