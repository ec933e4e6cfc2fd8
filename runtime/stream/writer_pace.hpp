#pragma once
// The back-pressure of streaming: a rank does not start a tile that lies too far (in the
// run's order) beyond the first one whose results its writer has not written, so a
// writer slower than the ranks slows them rather than letting results pile up unwritten,
// and what is left to write after the last tile stays bounded. The writer counts the
// tiles whose rows it wrote in the store's kTilesWritten; the ranks read that count.
#include <chrono>
#include <cstdint>
#include <span>

#include "distributed/communicator.hpp"
#include "source/reader_pool.hpp"
#include "stream/returned_tiles.hpp"

namespace mgpr::runtime {

// At least this many tiles may wait for the writer: 256 tiles of 256 boxes are about
// 1 s of the writer measured (docs/benchmarks.md); 512 left 2.2 s to write after the
// last tile, and the job took no less time.
inline constexpr std::int64_t kUnwrittenTiles = 256;
// The tiles a rank's message of results carries (output_stream.hpp's ResultMail): what a
// rank may hold back before its writer sees it, which the pacing allows for.
inline constexpr std::int64_t kMailTiles = 256;
// How often the writer looks for the other ranks' results (one request for all their
// counts), however often its own rank's batches wake it: a message waits up to 2 s to
// fill, so a fifth of a second more is nothing, and at 50 ms the looks alone were a
// third of the store's requests at 16 ranks.
inline constexpr auto kMailPoll = std::chrono::milliseconds(200);
// Added to the writer's count when it fails: no tile of any run is that far ahead.
inline constexpr std::int64_t kReleasedCount = std::int64_t{1} << 50;

// How many tiles may wait for the writer in a run of `tiles` (the run's order): never
// fewer than kUnwrittenTiles, than two rows of the widest raster (so the tiles that
// complete the row the writer waits for are never held back: with either sharding they
// lie within one row of it), nor than what every rank has on its way while the writer
// keeps up: four batches, two of its longest leases (distributed/sharding.hpp: a rank's
// lease runs ahead of the others' in the run's order) and a message of results not yet
// sent. Measured with bench/store at 16 ranks: without the last two the ranks waited on
// the writer's count and read it 4,500 times in 20 s, half the store's requests.
std::int64_t unwritten_limit(std::span<const Tile> tiles, std::int64_t batch_size, int world_size);

// `feed`, waiting before it hands out a tile more than `limit` tiles beyond the count
// of `writer`. A writer that writes nothing for 10 s while this rank waits (a long COG;
// a raster failed part way does not hold it) releases the rank for the rest of the run,
// said once: it never waits for ever, it only holds more. A lost peer ends the wait.
// With `returned` (under on_rank_loss=continue): its tiles first, never paced (they are
// what the writer waits for), also while a tile waits, which waits on; and once `feed`
// ran out, the loop goes on until the writer wrote every row.
TileFeed paced_by_writer(TileFeed feed, std::span<const Tile> run_tiles, Communicator& communicator, int writer,
                         std::int64_t limit, ReturnedTiles* returned = nullptr);

// The writer's side: `tiles` more of the run's tiles were written (or passed over).
void count_written(Communicator& communicator, int writer, std::int64_t tiles);
// The writer failed: no rank waits for it any more.
void release_ranks_of(Communicator& communicator, int writer);
// What the writer's count says now (tests, and the ranks' pacing).
std::int64_t tiles_written(Communicator& communicator, int writer);

}  // namespace mgpr::runtime
