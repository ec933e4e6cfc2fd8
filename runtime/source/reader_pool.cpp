#include "source/reader_pool.hpp"

#include "source/read_error.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace mgpr::runtime {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

struct ReaderPool::State {
  State(const TileSource& tile_source, TileFeed tile_feed, std::size_t queue_capacity, TilePlacer* tile_placer,
        RasterFailed raster_failed)
      : source(tile_source),
        feed(std::move(tile_feed)),
        capacity(queue_capacity),
        placer(tile_placer),
        on_failure(std::move(raster_failed)) {}

  void work();
  // feed(), counted in in_feed while it runs.
  std::optional<Tile> fed();
  void stop_and_join();
  bool raster_failed(int image) {
    const std::lock_guard lock(mutex);
    return failures.contains(image);
  }

  const TileSource& source;
  const TileFeed feed;
  const std::size_t capacity;
  TilePlacer* const placer;
  const RasterFailed on_failure;

  std::mutex mutex;
  std::condition_variable slot_freed;  // a reader may claim the next tile
  std::condition_variable tile_ready;  // next() has something to return: a tile, an error, the end
  std::deque<TileData> ready;
  std::vector<TileData> spare;  // recycled buffers
  // Tiles being read plus tiles ready, at most `capacity`: memory stays bounded, and a
  // dynamic feed is not asked for a tile this rank has no room to hold yet.
  std::size_t claimed = 0;
  int running = 0;  // reader threads that have not finished
  // Reader threads inside feed(), and since when all of them are (feed_holds).
  int in_feed = 0;
  std::chrono::steady_clock::time_point all_in_feed_since{};
  bool stopping = false;
  std::exception_ptr error;
  RasterFailures failures;
  ReaderStats stats;
  std::vector<std::jthread> threads;  // last member: joined before the rest goes away
};

std::optional<Tile> ReaderPool::State::fed() {
  const auto leave = [this] {
    const std::lock_guard lock(mutex);
    --in_feed;
  };
  {
    const std::lock_guard lock(mutex);
    if (++in_feed == running) all_in_feed_since = std::chrono::steady_clock::now();
  }
  try {
    auto tile = feed();
    leave();
    return tile;
  } catch (...) {
    leave();
    throw;
  }
}

void ReaderPool::State::work() {
  try {
    const auto reader = source.open_reader();
    while (true) {
      TileData data;
      {
        std::unique_lock lock(mutex);
        slot_freed.wait(lock, [this] { return stopping || claimed < capacity; });
        if (stopping) break;
        ++claimed;
        if (!spare.empty()) {
          data = std::move(spare.back());
          spare.pop_back();
        }
      }
      const auto tile = fed();
      const auto release_slot = [this] {
        {
          const std::lock_guard lock(mutex);
          --claimed;
        }
        slot_freed.notify_one();
      };
      if (!tile) {
        release_slot();
        break;
      }
      if (raster_failed(tile->id.image)) {
        release_slot();
        continue;
      }
      const auto start = std::chrono::steady_clock::now();
      data.placed.reset();
      try {
        reader->read(*tile, data);
      } catch (const RasterReadError& failure) {
        // This raster is lost, not the run: its tile is left undone (so a rerun does it)
        // and the other rasters' tiles go on.
        bool first = false;
        {
          const std::lock_guard lock(mutex);
          first = failures.try_emplace(tile->id.image, failure.what()).second;
        }
        release_slot();
        if (first && on_failure) on_failure(tile->id.image, failure.what());
        continue;
      }
      const double read_s = seconds_since(start);
      if (placer != nullptr) placer->place(data);
      {
        const std::lock_guard lock(mutex);
        if (stopping) break;
        if (placer != nullptr) {
          // The samples are in the placer's hands: the buffers serve this pool's next read.
          TileData buffers;
          buffers.pixels = std::move(data.pixels);
          buffers.bytes = std::move(data.bytes);
          data.pixels = {};
          data.bytes = {};
          spare.push_back(std::move(buffers));
        }
        ++stats.tiles;
        stats.read_s += read_s;
        ready.push_back(std::move(data));
      }
      tile_ready.notify_one();
    }
  } catch (...) {
    {
      const std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
      stopping = true;  // the run fails anyway: the other readers need not finish theirs
    }
    slot_freed.notify_all();
  }
  {
    const std::lock_guard lock(mutex);
    // The readers left may all be in the feed from now on: they have waited from now.
    if (--running > 0 && in_feed == running) all_in_feed_since = std::chrono::steady_clock::now();
  }
  tile_ready.notify_all();
}

void ReaderPool::State::stop_and_join() {
  {
    const std::lock_guard lock(mutex);
    stopping = true;
  }
  slot_freed.notify_all();
  tile_ready.notify_all();
  if (placer != nullptr) placer->stop_waiting();
  threads.clear();  // each thread finishes at most the feed() or read() it is in
}

ReaderPool::ReaderPool(const TileSource& source, int workers, TileFeed feed, std::size_t queue_capacity,
                       TilePlacer* placer, RasterFailed on_failure)
    : state_(std::make_unique<State>(source, std::move(feed), queue_capacity, placer, std::move(on_failure))) {
  if (workers < 1) throw std::invalid_argument("ReaderPool needs at least one worker");
  if (queue_capacity < 1) throw std::invalid_argument("ReaderPool needs a queue capacity of at least one tile");
  state_->running = workers;
  try {
    state_->threads.reserve(static_cast<std::size_t>(workers));
    for (int i = 0; i < workers; ++i) state_->threads.emplace_back([state = state_.get()] { state->work(); });
  } catch (...) {
    // Threads already started would otherwise wait for a consumer that never comes.
    state_->stop_and_join();
    throw;
  }
}

ReaderPool::~ReaderPool() { state_->stop_and_join(); }

std::optional<TileData> ReaderPool::next() {
  auto& state = *state_;
  std::unique_lock lock(state.mutex);
  const auto start = std::chrono::steady_clock::now();
  state.tile_ready.wait(lock, [&state] { return state.error || !state.ready.empty() || state.running == 0; });
  state.stats.consumer_wait_s += seconds_since(start);
  if (state.error) std::rethrow_exception(state.error);
  if (state.ready.empty()) return std::nullopt;
  TileData tile = std::move(state.ready.front());
  state.ready.pop_front();
  --state.claimed;
  lock.unlock();
  state.slot_freed.notify_one();
  return tile;
}

bool ReaderPool::wait_for_tile(std::chrono::milliseconds at_most) {
  auto& state = *state_;
  std::unique_lock lock(state.mutex);
  return state.tile_ready.wait_for(lock, at_most,
                                   [&state] { return state.error || !state.ready.empty() || state.running == 0; });
}

bool ReaderPool::feed_holds(std::chrono::milliseconds at_least) const {
  auto& state = *state_;
  const std::lock_guard lock(state.mutex);
  return state.running > 0 && state.in_feed == state.running && state.ready.empty() &&
         std::chrono::steady_clock::now() - state.all_in_feed_since >= at_least;
}

void ReaderPool::recycle(TileData&& used) {
  const std::lock_guard lock(state_->mutex);
  if (state_->spare.size() < state_->capacity) state_->spare.push_back(std::move(used));
}

RasterFailures ReaderPool::failures() const {
  const std::lock_guard lock(state_->mutex);
  return state_->failures;
}

ReaderStats ReaderPool::stats() const {
  const std::lock_guard lock(state_->mutex);
  return state_->stats;
}

}  // namespace mgpr::runtime
