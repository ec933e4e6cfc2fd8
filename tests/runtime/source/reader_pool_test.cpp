// The reader pool with a scripted source: every tile exactly once, back-pressure,
// errors carried to the consumer, and a prompt stop when the consumer gives up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "source/read_error.hpp"
#include "source/reader_pool.hpp"

namespace {

using mgpr::runtime::ReaderPool;
using mgpr::runtime::Tile;
using mgpr::runtime::TileData;
using mgpr::runtime::TileFeed;
using mgpr::runtime::TileId;
using namespace std::chrono_literals;

constexpr int kNever = std::numeric_limits<int>::max();

// Tiles 0..count-1 (TileId{0, i, 0}) whose 4x4 single-channel pixels all hold i.
class ScriptedSource final : public mgpr::runtime::TileSource {
 public:
  ScriptedSource(int count, std::chrono::milliseconds delay = 0ms, int fail_at = kNever)
      : delay_(delay), fail_at_(fail_at) {
    for (int i = 0; i < count; ++i) tiles_.push_back(Tile{TileId{0, i, 0}, {0, 0, 4, 4}});
  }

  [[nodiscard]] const std::vector<Tile>& tiles() const override { return tiles_; }
  [[nodiscard]] const std::vector<mgpr::runtime::RasterDescription>& rasters() const override { return none_; }
  [[nodiscard]] int channels() const override { return 1; }
  [[nodiscard]] int tile_size() const override { return 4; }
  [[nodiscard]] std::unique_ptr<mgpr::runtime::TileReader> open_reader() const override {
    if (fail_to_open) throw std::runtime_error("scripted: cannot open a reader");
    return std::make_unique<Reader>(*this);
  }

  // Tiles in `images` blocks of equal size, image i holding rows [i*n, (i+1)*n); then the
  // failing tile's read throws RasterReadError: its raster is lost, not the run.
  void spread_over_images(int images) {
    const auto per_image = static_cast<int>(tiles_.size()) / images;
    for (auto& tile : tiles_) tile.id.image = tile.id.row / per_image;
    raster_error_ = true;
  }

  bool fail_to_open = false;
  // While set, reads of tiles after the failing one wait (at most 5 s): nothing after it
  // can reach the consumer before the error, however the threads are scheduled.
  mutable std::atomic<bool> hold_after_failure{false};
  mutable std::atomic<int> reads_started{0};
  mutable std::atomic<int> buffers_reused{0};

 private:
  class Reader final : public mgpr::runtime::TileReader {
   public:
    explicit Reader(const ScriptedSource& source) : source_(source) {}
    void read(const Tile& tile, TileData& out) override {
      ++source_.reads_started;
      if (out.pixels.capacity() >= 16) ++source_.buffers_reused;
      if (source_.delay_ > 0ms) std::this_thread::sleep_for(source_.delay_);
      for (int waited = 0; tile.id.row > source_.fail_at_ && source_.hold_after_failure && waited < 5000; ++waited) {
        std::this_thread::sleep_for(1ms);
      }
      if (tile.id.row == source_.fail_at_ && source_.raster_error_) {
        throw mgpr::runtime::RasterReadError("scripted: raster 1 is corrupt at tile " + std::to_string(tile.id.row));
      }
      if (tile.id.row == source_.fail_at_) throw std::runtime_error("scripted: tile 37 is unreadable");
      out.tile = tile;
      out.channels = 1;
      out.height = out.width = 4;
      out.pixels.assign(16, static_cast<float>(tile.id.row));
    }

   private:
    const ScriptedSource& source_;
  };

  std::vector<Tile> tiles_;
  std::vector<mgpr::runtime::RasterDescription> none_;
  std::chrono::milliseconds delay_;
  int fail_at_;
  bool raster_error_ = false;
};

// Hands out the source's tiles in order, then nullopt; counts its calls.
struct ListFeed {
  explicit ListFeed(const ScriptedSource& source) : tiles(&source.tiles()) {}
  TileFeed function() {
    return [this]() -> std::optional<Tile> {
      const std::lock_guard lock(mutex);
      ++calls;
      if (next == tiles->size()) return std::nullopt;
      return (*tiles)[next++];
    };
  }
  const std::vector<Tile>* tiles;
  std::mutex mutex;
  std::size_t next = 0;
  int calls = 0;
};

// Never runs out: for tests where the consumer stops first.
TileFeed endless_feed() {
  auto counter = std::make_shared<std::atomic<int>>(0);
  return [counter]() -> std::optional<Tile> { return Tile{TileId{0, (*counter)++, 0}, {0, 0, 4, 4}}; };
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class EveryTileOnce : public testing::TestWithParam<int> {};

TEST_P(EveryTileOnce, WithASmallQueue) {
  const int workers = GetParam();
  ScriptedSource source(300);
  ListFeed feed(source);
  ReaderPool pool(source, workers, feed.function(), 2);
  std::vector<int> seen;
  while (auto tile = pool.next()) {
    ASSERT_EQ(tile->pixels, std::vector<float>(16, static_cast<float>(tile->tile.id.row)));
    seen.push_back(tile->tile.id.row);
    pool.recycle(std::move(*tile));
  }
  EXPECT_FALSE(pool.next().has_value()) << "the end is reported again, not a hang";
  std::sort(seen.begin(), seen.end());
  std::vector<int> expected(300);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(pool.stats().tiles, 300);
  EXPECT_EQ(source.reads_started.load(), 300);
}

INSTANTIATE_TEST_SUITE_P(Workers, EveryTileOnce, testing::Values(1, 2, 4));

TEST(ReaderPool, EmptyFeedEndsAtOnce) {
  ScriptedSource source(0);
  ListFeed feed(source);
  ReaderPool pool(source, 3, feed.function(), 4);
  EXPECT_FALSE(pool.next().has_value());
}

TEST(ReaderPool, StopsReadingWhenTheQueueIsFull) {
  ScriptedSource source(0);
  ReaderPool pool(source, 2, endless_feed(), 3);
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(source.reads_started.load(), 3) << "capacity counts tiles being read and tiles ready";
  ASSERT_TRUE(pool.next().has_value());
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(source.reads_started.load(), 4) << "one slot freed, one more tile read";
}

TEST(ReaderPool, RethrowsTheFirstReaderError) {
  ScriptedSource source(200, 0ms, 37);
  source.hold_after_failure = true;
  ListFeed feed(source);
  ReaderPool pool(source, 2, feed.function(), 4);
  std::vector<int> received;
  try {
    while (auto tile = pool.next()) received.push_back(tile->tile.id.row);
    FAIL() << "the reader error was not rethrown";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("tile 37 is unreadable"));
  }
  source.hold_after_failure = false;
  EXPECT_TRUE(std::all_of(received.begin(), received.end(), [](int row) { return row < 37; }))
      << "only tiles before the failing one were held back from the consumer";
  EXPECT_THROW(pool.next(), std::runtime_error) << "the error stays";
  std::this_thread::sleep_for(50ms);
  const std::lock_guard lock(feed.mutex);
  EXPECT_LT(feed.calls, 200) << "the other reader stopped asking for tiles";
}

TEST(ReaderPool, ARasterThatCannotBeReadIsSkippedAndTheOthersFinish) {
  // 1 ms a read: the tiles of raster 1 after its failing first one are skipped, not read,
  // however the two readers are scheduled (only one read can be under way beside it).
  ScriptedSource source(300, 1ms, 100);
  source.spread_over_images(3);  // rows 100..199 are raster 1
  ListFeed feed(source);
  ReaderPool pool(source, 2, feed.function(), 4);
  std::vector<int> received;
  while (auto tile = pool.next()) received.push_back(tile->tile.id.row);
  const auto got = [&](int row) { return std::find(received.begin(), received.end(), row) != received.end(); };
  for (int row = 0; row < 300; ++row) {
    if (row < 100 || row >= 200) {
      EXPECT_TRUE(got(row)) << "row " << row << " of a good raster is missing";
    }
  }
  EXPECT_FALSE(got(100));
  const auto of_failed = std::count_if(received.begin(), received.end(), [](int r) { return r > 100 && r < 200; });
  EXPECT_LT(of_failed, 50) << "the failed raster's tiles went on being read";
  const auto failures = pool.failures();
  ASSERT_EQ(failures.size(), 1U);
  EXPECT_THAT(failures.at(1), testing::HasSubstr("corrupt at tile 100"));
}

TEST(ReaderPool, RethrowsFeedAndOpenErrors) {
  ScriptedSource source(10);
  {
    ReaderPool pool(
        source, 2, []() -> std::optional<Tile> { throw std::runtime_error("scripted: store gone"); }, 2);
    EXPECT_THROW(pool.next(), std::runtime_error);
  }
  source.fail_to_open = true;
  ListFeed feed(source);
  ReaderPool pool(source, 2, feed.function(), 2);
  try {
    (void)pool.next();
    FAIL() << "the open error was not rethrown";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("cannot open a reader"));
  }
}

TEST(ReaderPool, DestructorReturnsPromptlyWhenTheConsumerStopsEarly) {
  ScriptedSource source(0, 20ms);
  auto start = std::chrono::steady_clock::now();
  {
    ReaderPool pool(source, 4, endless_feed(), 4);
    ASSERT_TRUE(pool.next().has_value());
    ASSERT_TRUE(pool.next().has_value());
    start = std::chrono::steady_clock::now();
  }
  EXPECT_LT(seconds_since(start), 0.5) << "at most the reads in progress (20 ms) are waited for";
  const int reads = source.reads_started.load();
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(source.reads_started.load(), reads) << "no thread reads after the destructor";
}

TEST(ReaderPool, DestructorReturnsPromptlyWithNoConsumerAtAll) {
  ScriptedSource source(0, 5ms);
  const auto start = std::chrono::steady_clock::now();
  { ReaderPool pool(source, 2, endless_feed(), 2); }
  EXPECT_LT(seconds_since(start), 0.5);
}

TEST(ReaderPool, RecordsReadAndWaitTimes) {
  ScriptedSource source(5, 20ms);
  ListFeed feed(source);
  ReaderPool pool(source, 1, feed.function(), 2);
  while (auto tile = pool.next()) pool.recycle(std::move(*tile));
  const auto stats = pool.stats();
  EXPECT_EQ(stats.tiles, 5);
  EXPECT_GE(stats.read_s, 0.1);
  EXPECT_GE(stats.consumer_wait_s, 0.05) << "one worker at 20 ms a tile leaves the consumer waiting";
}

TEST(ReaderPool, RecycledBuffersAreReused) {
  ScriptedSource source(50, 2ms);
  ListFeed feed(source);
  ReaderPool pool(source, 1, feed.function(), 2);
  while (auto tile = pool.next()) pool.recycle(std::move(*tile));
  EXPECT_GT(source.buffers_reused.load(), 0);
}

// Takes each tile's pixels on the reader thread that read it, as the pipeline's batch
// slots do; with `block`, waits for room that never comes until the pool stops.
class RecordingPlacer final : public mgpr::runtime::TilePlacer {
 public:
  explicit RecordingPlacer(bool block = false) : block_(block) {}
  void place(mgpr::runtime::TileData& tile) override {
    std::unique_lock lock(mutex_);
    if (block_) {
      stopped_changed_.wait(lock, [&] { return stopped_; });
      throw std::runtime_error("stopped while waiting for room");
    }
    EXPECT_EQ(tile.pixels, std::vector<float>(16, static_cast<float>(tile.tile.id.row)));
    placed_rows.push_back(tile.tile.id.row);
    reader_threads.push_back(std::this_thread::get_id());
    tile.placed = mgpr::runtime::TileData::Placement{0, tile.tile.id.row};
  }
  void stop_waiting() override {
    {
      const std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    stopped_changed_.notify_all();
  }
  std::vector<int> placed_rows;
  std::vector<std::thread::id> reader_threads;

 private:
  bool block_;
  std::mutex mutex_;
  std::condition_variable stopped_changed_;
  bool stopped_ = false;
};

TEST(ReaderPool, APlacerTakesEachTileOnItsReaderThreadAndTheBuffersStay) {
  ScriptedSource source(40, 1ms);
  ListFeed feed(source);
  RecordingPlacer placer;
  std::vector<int> handed_out;
  {
    ReaderPool pool(source, 2, feed.function(), 4, &placer);
    while (auto tile = pool.next()) {
      EXPECT_TRUE(tile->pixels.empty()) << "the pixels stayed with the placer's copy";
      ASSERT_TRUE(tile->placed.has_value());
      EXPECT_EQ(tile->placed->row, tile->tile.id.row);
      handed_out.push_back(tile->tile.id.row);
    }
  }
  std::sort(handed_out.begin(), handed_out.end());
  auto placed = placer.placed_rows;
  std::sort(placed.begin(), placed.end());
  EXPECT_EQ(placed, handed_out);
  EXPECT_EQ(placed.size(), 40U);
  EXPECT_TRUE(std::none_of(placer.reader_threads.begin(), placer.reader_threads.end(), [](std::thread::id id) {
    return id == std::this_thread::get_id();
  })) << "the consumer's thread placed a tile";
  EXPECT_GT(source.buffers_reused.load(), 30) << "each reader reuses its buffer without recycle()";
}

TEST(ReaderPool, StoppingWakesAReaderWaitingForRoomInThePlacer) {
  ScriptedSource source(0);
  RecordingPlacer placer(true);
  const auto start = std::chrono::steady_clock::now();
  {
    ReaderPool pool(source, 2, endless_feed(), 4, &placer);
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_LT(seconds_since(start), 0.5) << "the destructor waited on a placer that was never told to stop";
}

}  // namespace
