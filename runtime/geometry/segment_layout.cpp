#include "geometry/segment_layout.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

namespace mgpr::runtime {

std::vector<AxisRange> owned_ranges(const std::vector<int>& starts, int tile_size, int length) {
  if (tile_size < 1 || length < 0) throw std::invalid_argument("owned_ranges: tile_size >= 1 and length >= 0");
  const int window = std::min(tile_size, length);
  // Anything else leaves pixels outside every window or windows outside the axis.
  const bool ascending = std::adjacent_find(starts.begin(), starts.end(), std::greater_equal<>()) == starts.end();
  if (starts.empty() || starts.front() != 0 || starts.back() + window != length || !ascending) {
    throw std::invalid_argument("owned_ranges: starts must ascend from 0 and the last window end at " +
                                std::to_string(length));
  }
  // All windows have the same width, so a pixel's distance from the nearest edge of a
  // window grows as its distance from the window's centre shrinks: the owner is the
  // nearest centre. Windows i and i+1 split at the midpoint of their centres,
  // (s_i + s_i+1 + window - 1) / 2; a pixel exactly on it goes to i (the earlier).
  std::vector<AxisRange> ranges(starts.size());
  ranges.front().begin = 0;
  for (std::size_t i = 0; i + 1 < starts.size(); ++i) {
    const int split = (starts[i] + starts[i + 1] + window - 1) / 2 + 1;
    ranges[i].end = split;
    ranges[i + 1].begin = split;
  }
  ranges.back().end = length;
  return ranges;
}

PixelWindow tile_core(const Tile& tile, int width, int height, int tile_size, int overlap) {
  const auto columns = window_starts(width, tile_size, overlap);
  const auto rows = window_starts(height, tile_size, overlap);
  const auto column = static_cast<std::size_t>(tile.id.column);
  const auto row = static_cast<std::size_t>(tile.id.row);
  // A tile from another tiling would get a core that is not its own, silently.
  if (tile.id.column < 0 || tile.id.row < 0 || column >= columns.size() || row >= rows.size() ||
      columns[column] != tile.window.x || rows[row] != tile.window.y) {
    throw std::invalid_argument("tile_core: the tile does not come from this tiling");
  }
  const AxisRange x = owned_ranges(columns, tile_size, width)[column];
  const AxisRange y = owned_ranges(rows, tile_size, height)[row];
  return PixelWindow{x.begin, y.begin, x.end - x.begin, y.end - y.begin};
}

}  // namespace mgpr::runtime
