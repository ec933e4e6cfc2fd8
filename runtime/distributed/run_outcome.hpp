#pragma once
// How the tile loop ended, as every rank agrees once each has learnt every raster that
// failed and how many tiles every rank finished. The results themselves
// went to their writer while the tiles ran (stream/output_stream.hpp).
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
  kTilesSkipped,   // every tile but those lost with two ranks (stream/tile_dealer.hpp) and failed rasters'
};

// The program's exit status for how the run ended (mgpr/exit_codes.hpp): a run with
// tiles missing failed; a stopped one asks to be requeued.
int exit_status(Outcome outcome);

// What one rank brings to the agreement: how many tiles of each raster (by
// TileId::image) it finished in this run, and the rasters it could not read.
struct RankResults {
  const std::map<int, std::int64_t>& tiles_done;
  const RasterFailures& failures;
  std::int64_t skipped = 0;  // tiles skipped, lost with two ranks (rank 0's writer knows them)
};

// Tiles per raster (index = TileId::image; fake data: image 0 alone).
std::vector<std::int64_t> tiles_per_image(std::span<const Tile> tiles);
// The same for the tiles of `tiles` with a result in `done`.
std::vector<std::int64_t> done_per_image(const TileResults& done, std::span<const Tile> tiles);

// Every failed raster gathered into `failed` (the first reason a rank gave); then every
// rank's count of tiles finished, in all and outside the failed rasters, added to those
// earlier runs finished (`done_before`, per image) into `done_total`; then the outcome
// over the run's `tiles`. Collective: every rank calls it. Besides the failures, two
// numbers a rank cross: nothing grows with the results or the rasters.
Outcome agree_on_outcome(Communicator& communicator, const RankResults& own, std::span<const Tile> tiles,
                         std::span<const std::int64_t> done_before, RasterFailures& failed, std::int64_t& done_total);

// Failures travel between ranks as lines "image<TAB>reason".
std::string encode_failures(const RasterFailures& failures);
void decode_failures(const std::string& text, RasterFailures& into);

}  // namespace mgpr::runtime
