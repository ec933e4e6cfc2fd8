#pragma once
// What the ranks of a GPU run must agree on before NCCL is set up, as pure functions
// over what each rank published through the store, so they are tested without GPUs.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// How far a staging buffer of the NCCL communicator (pinned host or device memory),
// holding `held` bytes, grows when a collective needs `needed`: not at all when it is
// enough, else to at least double (whole pages), so a run of growing gathers
// reallocates a few times, not at every call. Reallocating frees the old buffer, and
// freeing CUDA memory waits for the whole device, so it must be rare.
std::size_t staging_capacity(std::size_t held, std::size_t needed);

// The shape ncclAllGather needs for payloads of unequal `lengths` (by rank): each rank's
// bytes padded to the longest (at least one byte, as NCCL wants a count), one after
// another in rank order.
struct GatherLayout {
  std::size_t padded = 1;  // bytes each rank contributes
  std::size_t total = 1;   // padded * ranks: the gathered buffer
};

// Throws std::runtime_error when a rank reported a negative length or the gathered
// bytes would not fit in memory's addresses: the ranks disagree on the protocol, and
// allocating from such a length would fail far from its cause.
GatherLayout gather_layout(const std::vector<std::int64_t>& lengths);

// Each rank's bytes out of `gathered` (laid out as `layout` says), without the padding.
std::vector<std::string> split_gathered(std::string_view gathered, const GatherLayout& layout,
                                        const std::vector<std::int64_t>& lengths);

}  // namespace mgpr::runtime
