#pragma once
// Reads tiles ahead of the model on `workers` threads into a bounded queue, so reading
// hides behind compute and memory stays bounded (back-pressure when the model is slower).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

// Hands out the next tile this rank should process; nullopt once there is none. Called
// from several reader threads at once: implementations are thread-safe.
using TileFeed = std::function<std::optional<Tile>()>;

// Told, on the reader thread, the first time a raster's read fails on this rank, with the
// reason: so that what waits for the raster's other tiles (rank 0's writer) can give up on
// it at once instead of at the end of the run.
using RasterFailed = std::function<void(int image, const std::string& reason)>;

// Takes each tile's samples off the reader thread that read it: the pipeline copies them
// straight into a batch slot (pipeline/batch_slots.hpp), so that copy runs on every
// reader thread at once instead of one. Called from several reader threads at once.
class TilePlacer {
 public:
  virtual ~TilePlacer() = default;
  // Right after `tile` was read, on the reader thread: copies its samples out and sets
  // tile.placed. May wait for room; throws to stop the run (the pool rethrows it from
  // next()). The pool then keeps the tile's pixel buffers for its next read, and next()
  // hands out the tile without them.
  virtual void place(TileData& tile) = 0;
  // The pool is stopping: a place() waiting for room returns at once, by throwing.
  virtual void stop_waiting() = 0;
};

struct ReaderStats {
  std::int64_t tiles = 0;
  double read_s = 0;           // summed over the reader threads
  double consumer_wait_s = 0;  // time next() waited for a tile: I/O the model did not hide
};

class ReaderPool {
 public:
  // `queue_capacity` (>= 1) counts tiles being read as well as tiles ready, so at most
  // that many TileData exist besides those the consumer holds, and a dynamic feed is
  // not asked for a tile there is no room for yet; give at least `workers` to keep every
  // worker busy. `source` must outlive the pool. Throws std::invalid_argument for
  // workers < 1 or queue_capacity < 1. With a `placer` (which must outlive the pool),
  // every tile read is handed to it on the reader thread before next() sees it.
  // `on_failure`, when set, hears of each raster failed on this rank as it fails.
  ReaderPool(const TileSource& source, int workers, TileFeed feed, std::size_t queue_capacity,
             TilePlacer* placer = nullptr, RasterFailed on_failure = {});
  // Stops the threads and joins them, also when the consumer stopped early: it waits at
  // most for the feed() or read() calls in progress.
  ~ReaderPool();
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // The next tile read, in no particular order; nullopt when the feed is exhausted and
  // every read tile was taken. A tile whose read throws RasterReadError
  // (source/read_error.hpp: an unreadable or corrupt raster) marks its raster failed: that
  // tile and the raster's later ones are skipped, the other rasters go on. Rethrows the
  // first other exception a reader thread hit.
  std::optional<TileData> next();
  // Waits at most `at_most` for next() to have something to return without waiting
  // (a tile, an error, the end); whether it has.
  bool wait_for_tile(std::chrono::milliseconds at_most);
  // Whether every reader thread has waited on the feed for `at_least` or longer with no
  // tile ready: what the feed waits for (rank 0's writer, for the pacing) may be the
  // tiles this rank already read, which must then not wait for more.
  [[nodiscard]] bool feed_holds(std::chrono::milliseconds at_least) const;
  // Returns a consumed tile's buffers for reuse (optional; avoids reallocations).
  void recycle(TileData&& used);
  [[nodiscard]] ReaderStats stats() const;
  // The rasters whose reads failed on this rank, with the first reason for each.
  [[nodiscard]] RasterFailures failures() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mgpr::runtime
