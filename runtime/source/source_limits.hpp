#pragma once
// Checks every tile source makes on the tiling keys, so a tile that cannot be held in
// memory fails at start-up with the key to change rather than deep in an allocation.
#include <fmt/format.h>

#include <cstdint>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"

namespace mgpr::runtime {

// One tile's float buffer; the reader pool holds a few of them per worker.
inline constexpr std::int64_t kMaxTileBytes = std::int64_t{1} << 30;

inline void check_tiling(const RunConfig& config, int channels) {
  validate_tiling(config);
  const auto side = static_cast<std::int64_t>(config.tile_size);
  const std::int64_t tile_bytes = side * side * channels * static_cast<std::int64_t>(sizeof(float));
  if (tile_bytes > kMaxTileBytes) {
    throw UsageError(
        fmt::format("tile_size={} makes {:.1f} GiB per {}-channel float tile, more than the {} GiB "
                    "allowed; use tile_size=1024 or another size a model takes",
                    config.tile_size, static_cast<double>(tile_bytes) / (1 << 30), channels, kMaxTileBytes >> 30));
  }
}

}  // namespace mgpr::runtime
