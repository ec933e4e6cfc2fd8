#pragma once
// What a rank's pipeline holds in host memory at once, checked against what the node
// (or the job's cgroup) allows before any tile is read: a batch_size or tile_size past
// it would otherwise end hours in as a bare std::bad_alloc.
#include <cstdint>
#include <optional>

#include "mgpr/config.hpp"

namespace mgpr::runtime {

// The tiles in flight, as float pixels: the batch on its way to the model, the one
// being filled and the reader pool's queue (2 batches + one per worker).
std::uint64_t pipeline_host_bytes(const RunConfig& config, int channels);

// The smaller of the machine's memory and the cgroup's limit (Slurm's --mem), when known.
std::optional<std::uint64_t> memory_limit_bytes();

// Throws UsageError naming batch_size and tile_size when pipeline_host_bytes is more
// than `limit` (default: memory_limit_bytes()).
void check_memory_budget(const RunConfig& config, int channels,
                         std::optional<std::uint64_t> limit = memory_limit_bytes());

}  // namespace mgpr::runtime
