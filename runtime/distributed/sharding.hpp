#pragma once
// Which tiles a rank processes. Static: every world_size-th tile. Dynamic: ranks claim
// the next tile from a counter on the rendezvous store, so a slow rank does not hold the
// job; every tile is still processed exactly once.
#include <span>

#include "distributed/communicator.hpp"
#include "source/reader_pool.hpp"

namespace mgpr::runtime {

TileFeed make_static_feed(std::span<const Tile> tiles, int rank, int world_size);
// `run_key` names the counter, so two runs on one store do not share it.
TileFeed make_dynamic_feed(std::span<const Tile> tiles, Communicator& communicator, const std::string& run_key);

}  // namespace mgpr::runtime
