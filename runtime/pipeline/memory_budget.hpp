#pragma once
// What a rank's pipeline holds in host memory at once, checked against what the node
// (or the job's cgroup) allows before any tile is read: a batch_size or tile_size past
// it would otherwise end hours in as a bare std::bad_alloc.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "pipeline/pipeline.hpp"

namespace mgpr::runtime {

// The tiles in flight (InFlightTiles::total()), as float pixels.
std::uint64_t pipeline_host_bytes(std::size_t tiles_in_flight, int tile_size, int channels);

// The smaller of the machine's memory and the cgroup's limit (Slurm's --mem), when known.
std::optional<std::uint64_t> memory_limit_bytes();

// Throws UsageError naming batch_size and tile_size when the tiles in flight need more
// than `limit` (default: memory_limit_bytes()).
void check_memory_budget(const InFlightTiles& in_flight, int tile_size, int channels,
                         std::optional<std::uint64_t> limit = memory_limit_bytes());

}  // namespace mgpr::runtime
