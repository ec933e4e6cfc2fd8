#include "distributed/sharding.hpp"

#include <atomic>
#include <vector>

#include "geometry/tiler.hpp"

namespace mgpr::runtime {

// The feeds copy their tiles (a few ints each) so they outlive whatever owned the span.

TileFeed make_static_feed(std::span<const Tile> tiles, int rank, int world_size) {
  struct State {
    std::vector<Tile> mine;
    std::atomic<std::size_t> next{0};
  };
  auto state = std::make_shared<State>();
  state->mine = static_shard(tiles, rank, world_size);
  return [state]() -> std::optional<Tile> {
    const std::size_t i = state->next.fetch_add(1);
    if (i >= state->mine.size()) return std::nullopt;
    return state->mine[i];
  };
}

TileFeed make_dynamic_feed(std::span<const Tile> tiles, Communicator& communicator, const std::string& run_key) {
  struct State {
    std::vector<Tile> tiles;
    std::atomic<bool> exhausted{false};
  };
  auto state = std::make_shared<State>();
  state->tiles.assign(tiles.begin(), tiles.end());
  return [state, &communicator, run_key]() -> std::optional<Tile> {
    // Once one claim ran past the end every later one would too: skip the round trip.
    if (state->exhausted.load(std::memory_order_relaxed)) return std::nullopt;
    const std::int64_t claimed = communicator.add(run_key, 1) - 1;
    if (claimed < 0 || static_cast<std::size_t>(claimed) >= state->tiles.size()) {
      state->exhausted.store(true, std::memory_order_relaxed);
      return std::nullopt;
    }
    return state->tiles[static_cast<std::size_t>(claimed)];
  };
}

}  // namespace mgpr::runtime
