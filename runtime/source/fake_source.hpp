#pragma once
// The original project's fake data: a fixed number of tile_size x tile_size, 3-channel
// tiles with an optional sleep per tile to mimic slow storage. Needs no GDAL, so the
// environment check runs in any build and with no file at hand.
#include <memory>
#include <optional>
#include <string_view>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

inline constexpr int kFakeChannels = 3;

// Tile i is TileId{0, i, 0} with window (0, 0, tile_size, tile_size); the values are
// already in [0, 1], so no scaling applies (scale, mean and std are not used).
//
// options.sample kUInt8 or kUInt16: each sample is fake_pixel()'s integer, v =
// fake_pixel() * 255 in 0..255, as the type holds it (v for uint8, v * 257 for uint16,
// so it spans the type's range as 255 / 255 = 65535 / 65535). With `raw_samples` the
// tiles travel raw (TileData::bytes) with raw_scaling() 1/255 or 1/65535 and offset 0, as
// a Byte or UInt16 raster's do, and the model receives fake_pixel()'s values to float32's
// rounding of one multiplication. Without, the readers divide by the type's range as they
// do a raster's, which gives fake_pixel()'s values exactly.
//
// Throws UsageError for a count below 1, a negative delay, an oversized tile or a sample
// type other than those two.
std::unique_ptr<TileSource> make_fake_source(const FakeDataOptions& options, int tile_size, bool raw_samples = true);

// dummy_dataset_type=: "float32" (nullopt), "uint8" or "uint16" (mgpr/run_choices.hpp's
// kFakeDataTypeNames). Throws UsageError naming the key, the value and the names allowed.
std::optional<RawSample> parse_fake_data_type(std::string_view name);

// The value of one fake pixel, public so tests (and model tests through the whole
// pipeline) can compute what a tile holds: a diagonal gradient shifted by the tile
// index, so tiles differ from each other and are never constant.
float fake_pixel(int tile_index, int channel, int y, int x);

}  // namespace mgpr::runtime
