#include "distributed/sharding.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "geometry/tiler.hpp"
#include "resume/stop_request.hpp"

namespace mgpr::runtime {

// The feeds copy their tiles (a few ints each) so they outlive whatever owned the span.

std::int64_t lease_size(std::int64_t unclaimed, std::int64_t ranks) {
  return std::clamp<std::int64_t>(unclaimed / (kLeasesPerRankLeft * std::max<std::int64_t>(ranks, 1)), 1,
                                  kLongestLease);
}

TileFeed stop_when_asked(TileFeed feed, Communicator& communicator) {
  return [inner = std::move(feed), &communicator]() -> std::optional<Tile> {
    communicator.check_peers();
    if (stop_signal() != 0) return std::nullopt;
    return inner();
  };
}

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

TileFeed make_dynamic_feed(std::span<const Tile> tiles, Communicator& communicator, const std::string& run_key,
                           LeaseBook* book, std::function<void()> on_handed) {
  struct State {
    std::vector<Tile> tiles;
    std::int64_t ranks = 1;
    std::mutex mutex;      // guards what follows: the rank's reader threads share its lease
    std::size_t next = 0;  // the lease's next tile, and its end
    std::size_t end = 0;
    std::int64_t claimed_up_to = 0;  // the counter as this rank last saw it
    bool exhausted = false;
    std::int64_t handed_marks = 0;  // kHandedMark's count as this rank last saw it
  };
  auto state = std::make_shared<State>();
  state->tiles.assign(tiles.begin(), tiles.end());
  state->ranks = std::max(communicator.world_size(), 1);
  return [state, &communicator, run_key, book, on_handed = std::move(on_handed)]() -> std::optional<Tile> {
    const std::lock_guard lock(state->mutex);
    if (state->next < state->end) return state->tiles[state->next++];
    // Once one claim ran past the end every later one would too: skip the round trip.
    if (state->exhausted) return std::nullopt;
    const auto total = static_cast<std::int64_t>(state->tiles.size());
    const auto size = lease_size(total - state->claimed_up_to, state->ranks);
    // The other reader threads wait meanwhile: they would claim the same.
    const std::int64_t answer = communicator.add(run_key, size);
    if (const auto marks = answer / kHandedMark; marks != state->handed_marks) {
      state->handed_marks = marks;
      if (on_handed) on_handed();
    }
    const std::int64_t lease_end = answer % kHandedMark;
    state->claimed_up_to = lease_end;
    const std::int64_t first = lease_end - size;
    if (first < 0 || first >= total) {
      state->exhausted = true;
      return std::nullopt;
    }
    state->next = static_cast<std::size_t>(first);
    state->end = static_cast<std::size_t>(std::min(lease_end, total));
    if (book != nullptr) book->claimed({first, static_cast<std::int64_t>(state->end)});
    return state->tiles[state->next++];
  };
}

}  // namespace mgpr::runtime
