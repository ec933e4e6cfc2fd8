// The rank's loop on the CPU with the fake source and a TorchScript model saved by the
// test: every tile reaches the consumer once with the model's answer for it, and a rank
// claims no more tiles from a shared feed than the loop can use.
#include "pipeline/pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "mgpr/error.hpp"
#include "pipeline/memory_budget.hpp"
#include "source/fake_source.hpp"
#include "support/temp_dir.hpp"
#include "support/tile_mean_model.hpp"

namespace {

namespace rt = mgpr::runtime;
using namespace std::chrono_literals;

constexpr int kTileSize = 8;

std::unique_ptr<rt::TileSource> fake_tiles(int count) { return rt::make_fake_source({count, 0.0}, kTileSize); }

// The tile-mean model in fp32 on the CPU.
rt::TileModel tile_mean_model(const rt::DeviceChoice& cpu, int channels) {
  const auto file = mgpr::test::save_tile_mean_model(mgpr::test::program_temp_dir().path()).string();
  const auto plans = rt::plan_execution({mgpr::Precision::kFp32, false, true}, rt::execution_facts(cpu));
  return rt::TileModel({file, {}, kTileSize}, cpu, channels, plans);
}

// Hands out the source's tiles in order, as a dynamic feed shared with other ranks
// would, counting how many this rank has claimed.
struct CountingFeed {
  explicit CountingFeed(const std::vector<rt::Tile>& all) : tiles(all) {}
  rt::TileFeed feed() {
    return [this]() -> std::optional<rt::Tile> {
      const auto index = claimed.fetch_add(1);
      if (index >= static_cast<int>(tiles.size())) return std::nullopt;
      return tiles[static_cast<std::size_t>(index)];
    };
  }
  const std::vector<rt::Tile>& tiles;
  std::atomic<int> claimed{0};
};

// A slow consumer (the model's time, on a CPU), so the readers have all the time they
// want to read ahead; it notes each tile's logit and how many tiles the rank had
// claimed but not yet finished.
class SlowConsumer final : public rt::BatchConsumer {
 public:
  explicit SlowConsumer(const CountingFeed& feed) : feed_(feed) {}
  void consume(std::span<const rt::TileData> tiles, const torch::IValue& output) override {
    std::this_thread::sleep_for(30ms);
    const auto logits = output.toTensor();
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const int index = tiles[i].tile.id.row;  // fake tile i is TileId{0, i, 0}
      EXPECT_TRUE(tiles[i].pixels.empty()) << "the pixels went back to the readers once in the batch";
      double sum = 0;
      for (int channel = 0; channel < rt::kFakeChannels; ++channel) {
        for (int y = 0; y < kTileSize; ++y) {
          for (int x = 0; x < kTileSize; ++x) sum += rt::fake_pixel(index, channel, y, x);
        }
      }
      EXPECT_NEAR(logits[static_cast<std::int64_t>(i)][0].item<double>(),
                  sum / (rt::kFakeChannels * kTileSize * kTileSize), 1e-5);
      seen.insert(index);
    }
    const int claimed = std::min(feed_.claimed.load(), static_cast<int>(feed_.tiles.size()));
    most_unfinished = std::max(most_unfinished, claimed - finished);
    finished += static_cast<int>(tiles.size());
  }
  std::multiset<int> seen;
  int most_unfinished = 0;

 private:
  const CountingFeed& feed_;
  int finished = 0;
};

TEST(Pipeline, EveryTileReachesTheConsumerOnceWithItsOutput) {
  const auto source = fake_tiles(23);
  const rt::DeviceChoice cpu{};
  auto model = tile_mean_model(cpu, source->channels());
  CountingFeed feed(source->tiles());
  SlowConsumer consumer(feed);
  const auto stats = rt::run_pipeline({*source, 2, feed.feed(), rt::in_flight_tiles(4, 2, cpu).reader_queue()}, model,
                                      cpu, consumer, {4, {}, {}})
                         .stats;
  EXPECT_EQ(stats.tiles, 23);
  EXPECT_EQ(stats.batches, 6);  // five of 4 and the last 3
  ASSERT_EQ(consumer.seen.size(), 23U);
  for (int index = 0; index < 23; ++index) EXPECT_EQ(consumer.seen.count(index), 1U) << index;
}

// On a CPU the next batch is taken only after a forward pass, so a rank needs its
// current batch, the next and one more being read; a tile claimed beyond that is one
// another rank sharing the feed could have run while this one is still busy.
TEST(Pipeline, OnACpuARankClaimsAtMostOneBatchAheadOfTheLoop) {
  constexpr int kBatch = 4;
  constexpr int kWorkers = 2;
  const auto source = fake_tiles(40);
  const rt::DeviceChoice cpu{};
  const auto capacity = rt::in_flight_tiles(kBatch, kWorkers, cpu).reader_queue();
  EXPECT_EQ(capacity, static_cast<std::size_t>(kBatch + kWorkers));
  auto model = tile_mean_model(cpu, source->channels());
  CountingFeed feed(source->tiles());
  SlowConsumer consumer(feed);
  rt::run_pipeline({*source, kWorkers, feed.feed(), capacity}, model, cpu, consumer, {kBatch, {}, {}});
  // The batch being consumed, the next one taken, and the queue; the queue fills while
  // the consumer sleeps, so the rank does read ahead (more than the two batches it holds).
  EXPECT_LE(consumer.most_unfinished, 2 * kBatch + static_cast<int>(capacity));
  EXPECT_GT(consumer.most_unfinished, 2 * kBatch);
}

// A feed that hands out tile k only once the consumer has finished every tile but the
// last two before it, as the pacing by rank 0's writer does once the run is that far
// ahead of it: the tiles that writer waits for may be in the batch being filled. It
// waits at most kPatience, noting each time it had to give up, and then hands the tile
// out anyway (the pacing's release), so a pipeline that holds the batch is slow, not hung.
struct WriterPacedFeed {
  static constexpr auto kPatience = 3s;
  explicit WriterPacedFeed(const std::vector<rt::Tile>& all) : tiles(all) {}
  rt::TileFeed feed() {
    return [this]() -> std::optional<rt::Tile> {
      std::unique_lock lock(mutex);
      if (next >= static_cast<int>(tiles.size())) return std::nullopt;
      const int index = next++;
      if (!finished_changed.wait_for(lock, kPatience, [&] { return finished >= index - 2; })) ++gave_up;
      return tiles[static_cast<std::size_t>(index)];
    };
  }
  const std::vector<rt::Tile>& tiles;
  std::mutex mutex;
  std::condition_variable finished_changed;
  int next = 0;
  int finished = 0;
  int gave_up = 0;
};

class FinishingConsumer final : public rt::BatchConsumer {
 public:
  explicit FinishingConsumer(WriterPacedFeed& feed) : feed_(feed) {}
  void consume(std::span<const rt::TileData> tiles, const torch::IValue& /*output*/) override {
    {
      const std::lock_guard lock(feed_.mutex);
      feed_.finished += static_cast<int>(tiles.size());
    }
    feed_.finished_changed.notify_all();
  }

 private:
  WriterPacedFeed& feed_;
};

// The batch being filled goes with fewer tiles once every reader has waited on the feed
// a while: what the feed waits for may be in it. Without that, every third tile here
// would wait out the feed's patience.
TEST(Pipeline, ABatchTheFeedWaitsForGoesUnfilled) {
  const auto source = fake_tiles(12);
  const rt::DeviceChoice cpu{};
  auto model = tile_mean_model(cpu, source->channels());
  WriterPacedFeed feed(source->tiles());
  FinishingConsumer consumer(feed);
  const auto started = std::chrono::steady_clock::now();
  const auto stats = rt::run_pipeline({*source, 2, feed.feed(), rt::in_flight_tiles(4, 2, cpu).reader_queue()}, model,
                                      cpu, consumer, {4, {}, {}})
                         .stats;
  EXPECT_EQ(stats.tiles, 12);
  EXPECT_EQ(feed.gave_up, 0);
  EXPECT_GT(stats.batches, 3) << "some batches went unfilled";
  EXPECT_LT(std::chrono::steady_clock::now() - started, WriterPacedFeed::kPatience);
}

TEST(Pipeline, AGpuReadsTwoBatchesAhead) {
  const rt::DeviceChoice gpu{torch::Device(torch::kCUDA, 0), true, "a GPU"};
  EXPECT_EQ(rt::in_flight_tiles(16, 2, gpu).reader_queue(), 34U);
  EXPECT_EQ(rt::in_flight_tiles(16, 2, rt::DeviceChoice{}).reader_queue(), 18U);
}

// One count of the tiles in memory serves the memory budget: the batch slots (three on a
// GPU, two on a CPU) and a buffer per reader; the tiles in the reader pool's queue have
// left their pixels in a slot.
TEST(Pipeline, TheMemoryBudgetCountsTheTilesTheReaderPoolAndTheLoopHold) {
  const rt::DeviceChoice gpu{torch::Device(torch::kCUDA, 0), true, "a GPU"};
  const auto on_gpu = rt::in_flight_tiles(16, 2, gpu);
  const auto on_cpu = rt::in_flight_tiles(16, 2, rt::DeviceChoice{});
  EXPECT_EQ(on_gpu.total(), 48U + 2U);
  EXPECT_EQ(on_cpu.total(), 32U + 2U);
  constexpr int kSide = 512;
  const rt::HostTiles as_float{kSide, 3};
  const std::uint64_t tile_bytes = std::uint64_t{kSide} * kSide * 3 * sizeof(float);
  EXPECT_EQ(rt::pipeline_host_bytes(on_cpu, as_float), on_cpu.total() * tile_bytes);
  // Just enough memory passes; one byte less names both keys.
  const auto needed = rt::pipeline_host_bytes(on_gpu, as_float);
  EXPECT_NO_THROW(rt::check_memory_budget(on_gpu, as_float, needed));
  try {
    rt::check_memory_budget(on_gpu, as_float, needed - 1);
    ADD_FAILURE() << "no error";
  } catch (const mgpr::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("batch_size=16 with tile_size=512"), std::string::npos) << error.what();
  }
}

// Byte and 16-bit tiles are held as they travel, their samples and a one-byte valid mask
// a pixel, so a batch_size whose Byte tiles fit is not refused for float32 tiles it never
// holds; float tiles of the same size still are. A CPU scales raw tiles a pass at a time,
// and that pass's float32 copy is counted as float32.
TEST(Pipeline, TheMemoryBudgetCountsRawTilesAsTheyTravel) {
  constexpr int kSide = 1024;
  constexpr std::uint64_t kPlane = std::uint64_t{kSide} * kSide;
  const rt::HostTiles as_float{kSide, 3};
  const rt::HostTiles as_bytes{kSide, 3, rt::RawSample::kUInt8};
  const rt::HostTiles as_uint16{kSide, 3, rt::RawSample::kUInt16};
  EXPECT_EQ(rt::tile_host_bytes(as_float), kPlane * 3 * 4);
  EXPECT_EQ(rt::tile_host_bytes(as_bytes), kPlane * (3 + 1));
  EXPECT_EQ(rt::tile_host_bytes(as_uint16), kPlane * (3 * 2 + 1));

  const rt::DeviceChoice gpu{torch::Device(torch::kCUDA, 0), true, "a GPU"};
  const auto on_gpu = rt::in_flight_tiles(64, 2, gpu);
  const auto limit = rt::pipeline_host_bytes(on_gpu, as_bytes);
  ASSERT_LT(limit, rt::pipeline_host_bytes(on_gpu, as_float));
  EXPECT_NO_THROW(rt::check_memory_budget(on_gpu, as_bytes, limit));
  EXPECT_THROW(rt::check_memory_budget(on_gpu, as_uint16, limit), mgpr::UsageError);
  try {
    rt::check_memory_budget(on_gpu, as_float, limit);
    ADD_FAILURE() << "float32 tiles fit where only Byte tiles do";
  } catch (const mgpr::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("batch_size=64 with tile_size=1024 (3 bands as float32)"),
              std::string::npos)
        << error.what();
  }

  const auto on_cpu = rt::in_flight_tiles(64, 2, rt::DeviceChoice{});
  const rt::HostTiles bytes_in_passes{kSide, 3, rt::RawSample::kUInt8, 4};
  EXPECT_EQ(rt::pipeline_host_bytes(on_cpu, bytes_in_passes),
            on_cpu.total() * kPlane * (3 + 1) + 4 * rt::tile_host_bytes(as_float));
  EXPECT_LT(rt::pipeline_host_bytes(on_cpu, bytes_in_passes), rt::pipeline_host_bytes(on_cpu, as_float));
  // Float tiles are the model's input in place: no copy to count.
  EXPECT_EQ(rt::pipeline_host_bytes(on_cpu, {kSide, 3, std::nullopt, 4}), rt::pipeline_host_bytes(on_cpu, as_float));
}

}  // namespace
