#include "stream/returned_tiles.hpp"

#include <algorithm>
#include <utility>

#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {
namespace {

// How often a loop waiting for the writer asks whether to give up.
constexpr auto kLook = std::chrono::milliseconds(100);

}  // namespace

void ReturnedTiles::add(const std::vector<Tile>& tiles) {
  {
    const std::lock_guard lock(mutex_);
    tiles_.insert(tiles_.end(), tiles.begin(), tiles.end());
  }
  changed_.notify_all();
}

void ReturnedTiles::all_written() {
  {
    const std::lock_guard lock(mutex_);
    all_written_ = true;
  }
  changed_.notify_all();
}

bool ReturnedTiles::take_sweep_request() {
  const std::lock_guard lock(mutex_);
  return std::exchange(sweep_asked_, false);
}

void ReturnedTiles::ask_sweep() {
  const std::lock_guard lock(mutex_);
  sweep_asked_ = true;
}

bool ReturnedTiles::waiting() const {
  const std::lock_guard lock(mutex_);
  return !tiles_.empty();
}

std::optional<Tile> ReturnedTiles::take() {
  const std::lock_guard lock(mutex_);
  if (tiles_.empty()) return std::nullopt;
  const auto tile = tiles_.front();
  tiles_.pop_front();
  return tile;
}

std::optional<Tile> ReturnedTiles::wait(const std::function<bool()>& give_up) {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, kLook, [this] { return !tiles_.empty() || all_written_; });
      if (!tiles_.empty()) {
        const auto tile = tiles_.front();
        tiles_.pop_front();
        return tile;
      }
      if (all_written_) return std::nullopt;
    }
    if (idle_) idle_(true);
    if (give_up()) return std::nullopt;
  }
}

void sweep_once_all_finished(ReturnedTiles& returned, Communicator& communicator) {
  std::vector<std::string> keys;
  for (int rank = 1; rank < communicator.world_size(); ++rank) {
    keys.push_back(store_key(StoreKey::kRankFinished, rank));
    (void)communicator.add(keys.back(), 0);  // made now, so that one request reads them all
  }
  returned.on_idle([&returned, &communicator, keys](bool feed_ran_out) {
    if (!feed_ran_out || !returned.nothing_in_flight() || !returned.settled()) return;
    const auto lost = communicator.lost_ranks();
    const auto finished = communicator.counters(keys);
    for (std::size_t i = 0; i < finished.size(); ++i) {
      const int rank = static_cast<int>(i) + 1;
      if (finished[i] == 0 && std::find(lost.begin(), lost.end(), rank) == lost.end()) return;
    }
    returned.ask_sweep();
  });
}

void say_finished(Communicator& communicator) {
  communicator.add(store_key(StoreKey::kRankFinished, communicator.rank()), 1);
}

}  // namespace mgpr::runtime
