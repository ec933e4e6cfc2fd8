#pragma once
// Reads tiles ahead of the model on `workers` threads into a bounded queue, so reading
// hides behind compute and memory stays bounded (back-pressure when the model is slower).
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "tile_source.hpp"

namespace mgpr::runtime {

// Hands out the next tile this rank should process; nullopt once there is none. Called
// from several reader threads at once: implementations are thread-safe.
using TileFeed = std::function<std::optional<Tile>()>;

struct ReaderStats {
  std::int64_t tiles = 0;
  double read_s = 0;        // summed over the reader threads
  double consumer_wait_s = 0;  // time next() waited for a tile: I/O the model did not hide
};

class ReaderPool {
 public:
  ReaderPool(const TileSource& source, int workers, TileFeed feed, std::size_t queue_capacity);
  ~ReaderPool();  // stops the threads and joins them
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // The next tile read, in no particular order; nullopt when the feed is exhausted and
  // every read tile was taken. Rethrows the first exception a reader thread hit.
  std::optional<TileData> next();
  // Returns a consumed tile's buffers for reuse (optional; avoids reallocations).
  void recycle(TileData&& used);
  [[nodiscard]] ReaderStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mgpr::runtime
