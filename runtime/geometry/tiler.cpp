#include "geometry/tiler.hpp"

#include <algorithm>
#include <stdexcept>

namespace mgpr::runtime {

std::vector<int> window_starts(int length, int tile_size, int overlap) {
  if (tile_size < 1 || overlap < 0 || overlap >= tile_size) {
    throw std::invalid_argument("tile_size must be >= 1 and 0 <= overlap < tile_size");
  }
  if (length <= tile_size) return {0};
  const int step = tile_size - overlap;
  std::vector<int> starts;
  for (int start = 0; start + tile_size < length; start += step) starts.push_back(start);
  // Flush with the far edge; never a duplicate of the previous window.
  const int last = length - tile_size;
  if (starts.empty() || starts.back() != last) starts.push_back(last);
  return starts;
}

std::vector<Tile> tile_image(int image_index, int width, int height, int tile_size, int overlap) {
  const auto columns = window_starts(width, tile_size, overlap);
  const auto rows = window_starts(height, tile_size, overlap);
  std::vector<Tile> tiles;
  tiles.reserve(columns.size() * rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      tiles.push_back(Tile{TileId{image_index, static_cast<int>(r), static_cast<int>(c)},
                           PixelWindow{columns[c], rows[r], std::min(tile_size, width), std::min(tile_size, height)}});
    }
  }
  return tiles;
}

std::vector<Tile> static_shard(std::span<const Tile> tiles, int rank, int world_size) {
  std::vector<Tile> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < tiles.size(); i += static_cast<std::size_t>(world_size)) {
    mine.push_back(tiles[i]);
  }
  return mine;
}

}  // namespace mgpr::runtime
