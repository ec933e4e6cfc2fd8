#pragma once
// How the tile loop ended, as every rank agrees once each has learnt every result and
// every raster that failed.
#include <span>

#include "distributed/communicator.hpp"
#include "resume/tile_journal.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

enum class Outcome {
  kComplete,       // every tile has its result
  kRastersFailed,  // every tile but those of rasters that could not be read
  kStopped,        // stopped on request with tiles left; a rerun finishes them
};

// What one rank brings to the agreement: its results of this run and the rasters it could
// not read.
struct RankResults {
  const TileResults& results;
  const RasterFailures& failures;
};

// Every rank's results gathered into `done`, and every failed raster into `failed` (the
// first reason a rank gave); then the outcome over the run's `tiles`. Collective: every
// rank calls it.
Outcome agree_on_outcome(Communicator& communicator, const RankResults& own, std::span<const Tile> tiles,
                         TileResults& done, RasterFailures& failed);

// Failures travel between ranks as lines "image<TAB>reason".
std::string encode_failures(const RasterFailures& failures);
void decode_failures(const std::string& text, RasterFailures& into);

}  // namespace mgpr::runtime
