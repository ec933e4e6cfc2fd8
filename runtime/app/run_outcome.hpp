#pragma once
// How the tile loop ended, as every rank agrees once each has learnt how many tiles of
// each raster every rank finished and every raster that failed. The results themselves
// went to rank 0 while the tiles ran (output_stream.hpp).
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "distributed/communicator.hpp"
#include "resume/tile_journal.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

enum class Outcome {
  kComplete,       // every tile has its result
  kRastersFailed,  // every tile but those of rasters that could not be read
  kStopped,        // stopped on request with tiles left; a rerun finishes them
};

// What one rank brings to the agreement: how many tiles of each raster (by
// TileId::image) it finished in this run, and the rasters it could not read.
struct RankResults {
  const std::map<int, std::int64_t>& tiles_done;
  const RasterFailures& failures;
};

// Tiles per raster (index = TileId::image; fake data: image 0 alone).
std::vector<std::int64_t> tiles_per_image(std::span<const Tile> tiles);

// Every rank's tiles added to `done` (per image: those earlier runs finished, on entry),
// and every failed raster into `failed` (the first reason a rank gave); then the outcome
// over the run's `tiles`. Collective: every rank calls it. The bytes that cross grow
// with the rasters, not with the results.
Outcome agree_on_outcome(Communicator& communicator, const RankResults& own, std::span<const Tile> tiles,
                         std::vector<std::int64_t>& done, RasterFailures& failed);

// Failures travel between ranks as lines "image<TAB>reason".
std::string encode_failures(const RasterFailures& failures);
void decode_failures(const std::string& text, RasterFailures& into);
// Tiles finished travel as lines "image<SPACE>count".
std::string encode_tiles_done(const std::map<int, std::int64_t>& tiles_done);
void add_tiles_done(const std::string& text, std::vector<std::int64_t>& done);

}  // namespace mgpr::runtime
