#include "stream/writer_pace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/sharding.hpp"
#include "mgpr/store_keys.hpp"
#include "resume/stop_request.hpp"

namespace mgpr::runtime {
namespace {

// How long the writer may write nothing while a rank waits for it.
constexpr auto kWriterSilence = std::chrono::seconds(10);
// How often a waiting rank looks at the writer's count again.
constexpr auto kPacePoll = std::chrono::milliseconds(20);

// What the reader threads of a rank share of the writer: the last count learnt (it only
// grows, so the store is not asked while it allows the tile), and whether the rank
// stopped waiting for it.
struct WriterPace {
  std::atomic<std::int64_t> written{0};
  std::atomic<bool> released{false};
  std::mutex deferred_mutex;
  std::vector<Tile> deferred;  // tiles set aside for returned ones while they waited
};

}  // namespace

std::int64_t unwritten_limit(std::span<const Tile> tiles, std::int64_t batch_size, int world_size) {
  std::int64_t widest = 0;
  std::int64_t row = 0;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    row = i > 0 && tiles[i].id.image == tiles[i - 1].id.image && tiles[i].id.row == tiles[i - 1].id.row ? row + 1 : 1;
    widest = std::max(widest, row);
  }
  const auto on_the_way = world_size * (4 * batch_size + 2 * kLongestLease + kMailTiles);
  return std::max({kUnwrittenTiles, 2 * widest, on_the_way});
}

TileFeed paced_by_writer(TileFeed feed, std::span<const Tile> run_tiles, Communicator& communicator, int writer,
                         std::int64_t limit, ReturnedTiles* returned) {
  auto pace = std::make_shared<WriterPace>();
  auto paced = [inner = std::move(feed), run_tiles, &communicator, writer, limit, pace,
                returned]() -> std::optional<Tile> {
    if (returned != nullptr) {
      if (auto tile = returned->take()) return tile;
    }
    std::optional<Tile> tile;
    {
      const std::lock_guard lock(pace->deferred_mutex);
      if (!pace->deferred.empty()) {
        tile = pace->deferred.back();
        pace->deferred.pop_back();
      }
    }
    if (!tile) tile = inner();
    if (!tile && returned != nullptr) {
      return returned->wait([&] {
        communicator.check_peers();
        return stop_signal() != 0;
      });
    }
    if (!tile || pace->released) return tile;
    const auto at = std::lower_bound(run_tiles.begin(), run_tiles.end(), tile->id,
                                     [](const Tile& candidate, const TileId& id) { return candidate.id < id; });
    const auto position = static_cast<std::int64_t>(at - run_tiles.begin());
    auto last_change = std::chrono::steady_clock::now();
    while (position - pace->written > limit && stop_signal() == 0 && !pace->released) {
      // A writer held up by a rank the run lost would write nothing more: the loss ends the wait.
      communicator.check_peers();
      if (returned != nullptr) returned->look();
      if (auto other = returned != nullptr ? returned->take() : std::nullopt) {
        const std::lock_guard lock(pace->deferred_mutex);
        pace->deferred.push_back(*tile);
        return other;
      }
      const auto written = tiles_written(communicator, writer);
      const auto now = std::chrono::steady_clock::now();
      if (written > pace->written.exchange(written)) last_change = now;
      if (position - written <= limit) break;
      if (now - last_change > kWriterSilence) {
        if (!pace->released.exchange(true)) {
          fmt::print(stderr,
                     "mgpr: rank {}: rank {} has written no results for {} s; this rank goes on without waiting for "
                     "its writer (its results wait on rank {} until written)\n",
                     communicator.rank(), writer,
                     std::chrono::duration_cast<std::chrono::seconds>(kWriterSilence).count(), writer);
        }
        break;
      }
      std::this_thread::sleep_for(kPacePoll);
    }
    return tile;
  };
  if (returned == nullptr) return paced;
  return [paced = std::move(paced), returned]() -> std::optional<Tile> {
    auto tile = paced();
    if (tile) returned->handed();
    return tile;
  };
}

void count_written(Communicator& communicator, int writer, std::int64_t tiles) {
  communicator.add(store_key(StoreKey::kTilesWritten, writer), tiles);
}

void release_ranks_of(Communicator& communicator, int writer) { count_written(communicator, writer, kReleasedCount); }

std::int64_t tiles_written(Communicator& communicator, int writer) {
  return communicator.add(store_key(StoreKey::kTilesWritten, writer), 0);
}

}  // namespace mgpr::runtime
