#include "mgpr/tile_limits.hpp"

#include <fmt/format.h>

#include "mgpr/error.hpp"

namespace mgpr {

void check_tiling(int tile_size, int overlap) {
  if (tile_size < 1) {
    throw UsageError(fmt::format("tile_size={} must be at least 1; the usual is 512 or 1024", tile_size));
  }
  if (tile_size > kLargestTileSide) {
    throw UsageError(
        fmt::format("tile_size={} is too large: one tile would need {:.0f} GiB per band as float; use "
                    "at most {} (typical: 512 to 2048)",
                    tile_size, static_cast<double>(float_tile_bytes(tile_size, 1)) / (1 << 30), kLargestTileSide));
  }
  if (overlap < 0 || overlap >= tile_size) {
    throw UsageError(fmt::format("overlap ({}) must be smaller than tile_size ({}); lower overlap or raise tile_size",
                                 overlap, tile_size));
  }
}

void check_tile_bytes(int tile_size, int overlap, int channels) {
  // The bytes first: with the band count known, they say more than the side alone.
  const auto tile_bytes = float_tile_bytes(tile_size, channels);
  if (tile_size >= 1 && tile_bytes > kMaxTileBytes) {
    throw UsageError(
        fmt::format("tile_size={} makes {:.1f} GiB per {}-channel float tile, more than the {} GiB "
                    "allowed; use tile_size=1024 or another size a model takes",
                    tile_size, static_cast<double>(tile_bytes) / (1 << 30), channels, kMaxTileBytes >> 30));
  }
  check_tiling(tile_size, overlap);
}

}  // namespace mgpr
