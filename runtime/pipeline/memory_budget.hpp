#pragma once
// What a rank's pipeline holds in host memory at once, checked against what the node
// (or the job's cgroup) allows before any tile is read: a batch_size or tile_size past
// it would otherwise end hours in as a bare std::bad_alloc.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "pipeline/pipeline.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// How the run's tiles are held on the host, as they travel: float32, or, from a source
// with raw_scaling(), their raw samples with a one-byte valid mask per pixel (the batch
// slots keep a mask for every raw row, pipeline/batch_slots.hpp). Counted as float32, a
// Byte tile would weigh four times its samples, and a batch_size that fits be refused.
struct HostTiles {
  int tile_size = 1024;
  int channels = 1;
  std::optional<RawSample> raw = std::nullopt;  // set: the tiles travel raw, raw_sample_size bytes a sample
  // Raw tiles the host itself makes float32 at once: a CPU scales them a forward pass at
  // a time (pipeline/model_device.hpp), so one pass's float copy sits beside the slots.
  // 0 on a GPU, which scales them in its own memory, and for float tiles, which the
  // model reads in place.
  int float_pass_tiles = 0;
};

// One tile as it travels: its samples and, raw, its valid mask.
std::uint64_t tile_host_bytes(const HostTiles& tiles);

// The tiles in flight (InFlightTiles::total()) as they travel, and a CPU pass's float32
// copy of raw tiles.
std::uint64_t pipeline_host_bytes(const InFlightTiles& in_flight, const HostTiles& tiles);

// The smaller of the machine's memory and the cgroup's limit (Slurm's --mem), when known.
std::optional<std::uint64_t> memory_limit_bytes();

// Throws UsageError naming batch_size and tile_size when the tiles in flight need more
// than `limit` (default: memory_limit_bytes()).
void check_memory_budget(const InFlightTiles& in_flight, const HostTiles& tiles,
                         std::optional<std::uint64_t> limit = memory_limit_bytes());

}  // namespace mgpr::runtime
