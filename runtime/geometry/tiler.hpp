#pragma once
// Cuts rasters into overlapping tiles. Windows step by tile_size - overlap from the
// top-left corner, so with a block-aligned step no window rereads a GeoTIFF block; the
// last window of a row or column is moved back to sit flush with the image edge, so
// every tile is full-size (only an image smaller than a tile needs padding).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mgpr::runtime {

struct PixelWindow {
  int x = 0;  // column of the window's left edge
  int y = 0;  // row of the window's top edge
  int width = 0;
  int height = 0;
  bool operator==(const PixelWindow&) const = default;
};

// Deterministic across runs and ranks: the same inputs give the same ids.
struct TileId {
  int image = 0;  // index into the run's rasters
  int row = 0;    // tile row and column in the grid
  int column = 0;
  bool operator==(const TileId&) const = default;
  auto operator<=>(const TileId&) const = default;
};

struct Tile {
  TileId id;
  PixelWindow window;  // inside the image; smaller than tile_size only for small images
};

// Window origins along one axis of `length` pixels.
std::vector<int> window_starts(int length, int tile_size, int overlap);

// Every tile of one image, row-major.
std::vector<Tile> tile_image(int image_index, int width, int height, int tile_size, int overlap);

// The tiles rank `rank` of `world_size` processes under static sharding: every
// world_size-th tile, so neighbouring tiles (similar cost) spread over ranks.
std::vector<Tile> static_shard(std::span<const Tile> tiles, int rank, int world_size);

}  // namespace mgpr::runtime
