#pragma once
// Which tiles a rank processes. Static: every world_size-th tile. Dynamic: ranks claim
// the next tile from a counter on the rendezvous store, so a slow rank does not hold the
// job; every tile is still processed exactly once.
#include <cstdint>
#include <functional>
#include <span>

#include "distributed/communicator.hpp"
#include "distributed/lease_book.hpp"
#include "source/reader_pool.hpp"

namespace mgpr::runtime {

TileFeed make_static_feed(std::span<const Tile> tiles, int rank, int world_size);
// Dynamic sharding hands out leases: a claim (one add on the counter `run_key`, named so
// two runs on one store do not share it) takes several contiguous tiles, of one raster
// mostly (GDAL's block cache and a COG's ranges serve neighbours), which the rank's reader
// threads then share. Sizes are guided: a share of what is still unclaimed, so leases are
// long early and a tile long at the end, where the ranks then finish together; at most
// kLongestLease tiles, so a rank never holds much more than it will do in a few batches.
// A store request is made per lease, not per tile; with a `book`, which then records each
// lease, a second (lease_book.hpp). `on_handed` is called when the counter says rank 0
// handed tiles out again since this rank's last claim (kHandedMark).
TileFeed make_dynamic_feed(std::span<const Tile> tiles, Communicator& communicator, const std::string& run_key,
                           LeaseBook* book = nullptr, std::function<void()> on_handed = {});

// Under on_rank_loss=continue rank 0 adds this to the feed's counter whenever it hands a
// lost rank's tile to a live one (stream/tile_dealer.hpp): every claim's answer then says
// so in its high bits, and a rank looks for a tile handed to it without a request more.
// No run has 2^40 tiles.
inline constexpr std::int64_t kHandedMark = std::int64_t{1} << 40;

// Stops handing out tiles once a stop was asked for; tiles already claimed finish. A run
// that lost a rank cannot finish: the feed throws why, and the pipeline ends with it.
TileFeed stop_when_asked(TileFeed feed, Communicator& communicator);

// The rule: of `unclaimed` tiles, 1 / (kLeasesPerRankLeft x ranks), between 1 and kLongestLease.
inline constexpr std::int64_t kLongestLease = 64;
inline constexpr std::int64_t kLeasesPerRankLeft = 4;
std::int64_t lease_size(std::int64_t unclaimed, std::int64_t ranks);

}  // namespace mgpr::runtime
