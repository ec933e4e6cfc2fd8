#pragma once
// Every bound on the size of a tile, in one place: the configuration checks what it can
// from the keys alone, the run plan the rest once the rasters' band count is known, and
// the memory budget (runtime/pipeline/memory_budget.hpp) counts tiles of this size.
#include <cstdint>

namespace mgpr {

// A float tile of 16384 px a side is 1 GiB per band; beyond that a batch cannot fit a
// GPU, and the value is almost certainly a typo.
inline constexpr int kLargestTileSide = 16384;
// One tile's float buffer, all bands; the reader pool holds a few of them per worker.
inline constexpr std::int64_t kMaxTileBytes = std::int64_t{1} << 30;

// Bytes of one tile as the model receives it (float, all channels).
constexpr std::int64_t float_tile_bytes(int tile_size, int channels) {
  const auto side = static_cast<std::int64_t>(tile_size);
  return side * side * (channels < 1 ? 1 : channels) * static_cast<std::int64_t>(sizeof(float));
}

// Throws UsageError naming tile_size/overlap and the fix: tile_size from 1 to
// kLargestTileSide, overlap from 0 to tile_size - 1.
void check_tiling(int tile_size, int overlap);
// check_tiling, then one float tile of `channels` bands within kMaxTileBytes.
void check_tile_bytes(int tile_size, int overlap, int channels);

}  // namespace mgpr
