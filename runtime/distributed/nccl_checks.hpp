#pragma once
// What the ranks of a GPU run must agree on before NCCL is set up, as pure functions
// over what each rank published through the store, so they are tested without GPUs.
#include <optional>
#include <string>
#include <vector>

namespace mgpr::runtime {

// NCCL_VERSION_CODE as ncclGetVersion returns it, as "2.28.9" (codes before 2.9 had
// one digit fewer for the minor version).
std::string format_nccl_version(int code);

// The message for ranks that loaded different NCCL libraries (`versions` by rank), or
// nullopt when all agree. NCCL's wire protocol changes between versions, so mixed ones
// hang or fail deep inside a collective.
std::optional<std::string> nccl_version_mismatch(const std::vector<int>& versions);

// A rank's GPU as it reports it before the model loads.
struct GpuClaim {
  int rank = 0;
  std::string host;
  std::string uuid;  // "GPU-8f2c…", as nvidia-smi -L prints it
};

// The message for two or more ranks on one GPU (the first GPU claimed twice), or
// nullopt when every rank has a GPU of its own. NCCL refuses such ranks, and they
// would split the card's memory.
std::optional<std::string> shared_gpu_message(const std::vector<GpuClaim>& claims);

}  // namespace mgpr::runtime
