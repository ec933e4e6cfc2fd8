#pragma once
// The original project's fake data: a fixed number of tile_size x tile_size, 3-channel
// tiles with an optional sleep per tile to mimic slow storage. Needs no GDAL, so the
// environment check runs in any build and with no file at hand.
#include <memory>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

inline constexpr int kFakeChannels = 3;

// Tile i is TileId{0, i, 0} with window (0, 0, tile_size, tile_size); the values are
// already in [0, 1], so no scaling applies. Throws UsageError for a count below 1, a
// negative delay or an oversized tile.
std::unique_ptr<TileSource> make_fake_source(const FakeDataOptions& options, int tile_size);

// The value of one fake pixel, public so tests (and model tests through the whole
// pipeline) can compute what a tile holds: a diagonal gradient shifted by the tile
// index, so tiles differ from each other and are never constant.
float fake_pixel(int tile_index, int channel, int y, int x);

}  // namespace mgpr::runtime
