#pragma once
// Which tile each output pixel of task=segment comes from. Rule (docs/outputs.md): a
// pixel is taken from the tile in which it lies farthest from a tile edge, ties going to
// the earlier tile. Because tiles form a grid, the rule splits each axis independently,
// and every tile owns one rectangle (its "core"); the cores of all tiles cover the image
// exactly once. Each tile's piece of the mosaic is its core.
#include <vector>

#include "geometry/tiler.hpp"

namespace mgpr::runtime {

// Per-axis: for window starts `starts` (as window_starts gives them) of `tile_size`
// over `length` pixels, the [begin, end) range of pixels each window owns. The ranges
// are contiguous, ascending, and cover [0, length) exactly once.
struct AxisRange {
  int begin = 0;
  int end = 0;
  bool operator==(const AxisRange&) const = default;
};
std::vector<AxisRange> owned_ranges(const std::vector<int>& starts, int tile_size, int length);

// The core of `tile` in image pixels, for an image of width x height tiled with
// tile_size and overlap (the same arguments tile_image was given).
PixelWindow tile_core(const Tile& tile, int width, int height, int tile_size, int overlap);

}  // namespace mgpr::runtime
