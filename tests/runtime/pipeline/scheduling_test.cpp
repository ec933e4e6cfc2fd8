// The pipeline's scheduling on the simulated asynchronous device (copy and compute
// engines with latencies and jitter): every tile's output reaches that tile, batches are
// consumed in the order submitted, no slot is written while the device may still read
// it, several batches are in flight, and a failure or stop mid-flight loses nothing that
// was computed (the journal has every batch consumed before it).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/sharding.hpp"
#include "pipeline/model_device.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/simulated_device.hpp"
#include "resume/tile_journal.hpp"
#include "scheduling_support.hpp"
#include "source/fake_source.hpp"
#include "source/read_error.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace rt = mgpr::runtime;
using namespace std::chrono_literals;
using namespace mgpr::test::scheduling;

// The checks have teeth: misused directly, the simulated device counts each breach.
TEST(Scheduling, TheSimulatedDeviceCatchesEachBreachOfTheRules) {
  rt::SimulatedDeviceOptions options;
  options.slots = 2;
  options.copy_s = 0.05;  // long enough to write into the slot before the copy
  rt::SimulatedDevice device(options);
  const rt::BatchShape shape{2, 1, 4, 4};
  for (int slot = 0; slot < 2; ++slot) device.host_input(slot, shape).fill_(static_cast<float>(slot + 1));
  device.submit(0, 2, false);
  device.host_input(0, shape).fill_(7.0F);  // while slot 0 is in flight, before its copy
  device.submit(1, 2, false);
  device.submit(1, 2, false);          // again, before it was collected
  EXPECT_NO_THROW(device.collect(1));  // slot 0 is the oldest
  EXPECT_NO_THROW(device.collect(0));
  EXPECT_THROW(device.collect(0), std::logic_error);
  const auto checks = device.checks();
  EXPECT_EQ(checks.input_taken_in_flight, 1);
  EXPECT_EQ(checks.input_changed_before_copy, 1);
  EXPECT_EQ(checks.submitted_in_flight, 1);
  EXPECT_EQ(checks.collected_out_of_order, 1);
  EXPECT_EQ(checks.collected_not_submitted, 1);
  device.forward(0);  // a device whose forward does not block has no pass to run apart
  EXPECT_EQ(device.checks().forward_not_submitted, 1);
}

TEST(Scheduling, EveryTileGetsItsOwnOutputInOrderWithSeveralBatchesInFlight) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    const auto source = rt::make_fake_source({37, 0.0}, kTileSize);
    // One reader: tiles arrive in id order, so the consumer must see them in that order.
    rt::SimulatedDevice device(jittery(seed));
    CheckingConsumer consumer;
    const auto stats = rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer,
                                       {kBatch, {}, {}})
                           .stats;
    EXPECT_EQ(stats.tiles, 37);
    EXPECT_EQ(stats.batches, 10);  // nine of 4 and the last 1
    std::vector<int> in_order(37);
    for (int i = 0; i < 37; ++i) in_order[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(consumer.order, in_order) << "seed " << seed;
    const auto checks = device.checks();
    expect_kept_the_rules(checks);
    EXPECT_GE(checks.most_in_flight, 2) << "the host must queue a batch before the previous one is collected";
    EXPECT_LE(checks.most_in_flight, 3);
    EXPECT_GT(stats.model_s, 0);
  }
}

TEST(Scheduling, SeveralReadersStillGiveEveryTileOnceWithItsOutput) {
  const auto source = rt::make_fake_source({64, 0.0}, kTileSize);
  rt::SimulatedDevice device(jittery(11));
  CheckingConsumer consumer;
  rt::run_batches({*source, 3, rt::make_static_feed(source->tiles(), 0, 1), 12}, device, consumer, {kBatch, {}, {}});
  auto seen = consumer.order;
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 64U);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
  expect_kept_the_rules(device.checks());
}

TEST(Scheduling, ADeviceFailureMidFlightKeepsEveryBatchBeforeIt) {
  expect_a_failure_mid_flight_keeps_every_batch_before_it(jittery(3));
}

// A reader fails after several batches are queued: the run ends with that error, and
// every batch submitted before it was still consumed and journaled.
class FailingSource final : public rt::TileSource {
 public:
  // `raster_lost`: the failing read is a corrupt raster's (RasterReadError), which loses
  // that raster's tiles, not the run.
  FailingSource(int count, int failing, bool raster_lost = false)
      : inner_(rt::make_fake_source({count, 0.0}, kTileSize)), failing_(failing), raster_lost_(raster_lost) {}
  [[nodiscard]] const std::vector<rt::Tile>& tiles() const override { return inner_->tiles(); }
  [[nodiscard]] const std::vector<rt::RasterDescription>& rasters() const override { return inner_->rasters(); }
  [[nodiscard]] int channels() const override { return inner_->channels(); }
  [[nodiscard]] int tile_size() const override { return inner_->tile_size(); }
  [[nodiscard]] std::unique_ptr<rt::TileReader> open_reader() const override {
    class Reader final : public rt::TileReader {
     public:
      Reader(std::unique_ptr<rt::TileReader> inner, int failing, bool raster_lost)
          : inner_(std::move(inner)), failing_(failing), raster_lost_(raster_lost) {}
      void read(const rt::Tile& tile, rt::TileData& out) override {
        if (tile.id.row == failing_ && raster_lost_) throw rt::RasterReadError("the raster is corrupt (as set)");
        if (tile.id.row == failing_) throw std::runtime_error("the disk went away (as set)");
        inner_->read(tile, out);
      }

     private:
      std::unique_ptr<rt::TileReader> inner_;
      int failing_;
      bool raster_lost_;
    };
    return std::make_unique<Reader>(inner_->open_reader(), failing_, raster_lost_);
  }

 private:
  std::unique_ptr<rt::TileSource> inner_;
  int failing_;
  bool raster_lost_;
};

TEST(Scheduling, AReadFailureMidFlightStillConsumesWhatWasSubmitted) {
  FailingSource source(60, 30);
  auto options = jittery(5);
  options.compute_s = 0.02;  // slow enough that batches are queued when the read fails
  rt::SimulatedDevice device(options);
  CheckingConsumer consumer;
  EXPECT_THROW(
      rt::run_batches({source, 1, rt::make_static_feed(source.tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}}),
      std::runtime_error);
  const auto checks = device.checks();
  EXPECT_GT(checks.batches, 0);
  EXPECT_EQ(consumer.batches, checks.batches) << "a batch submitted before the failure was not consumed";
  EXPECT_LE(consumer.order.size(), 30U);
  expect_kept_the_rules(checks);
}

// A raster lost mid-batch with several readers: the rows the readers had placed before
// still fill batches (the last one short), each tile keeps its own output, and the run
// ends normally, naming the raster.
TEST(Scheduling, ARasterLostMidBatchLeavesNoHoleInTheBatches) {
  FailingSource source(60, 29, true);
  rt::SimulatedDevice device(jittery(9));
  CheckingConsumer consumer;
  const auto run =
      rt::run_batches({source, 3, rt::make_static_feed(source.tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}});
  ASSERT_EQ(run.failures.size(), 1U);
  EXPECT_NE(run.failures.at(0).find("corrupt"), std::string::npos);
  auto seen = consumer.order;
  std::sort(seen.begin(), seen.end());
  EXPECT_TRUE(std::adjacent_find(seen.begin(), seen.end()) == seen.end()) << "a tile was consumed twice";
  EXPECT_TRUE(std::find(seen.begin(), seen.end(), 29) == seen.end());
  EXPECT_GE(seen.size(), 29U) << "every tile before the lost one reached the consumer";
  EXPECT_EQ(run.stats.tiles, static_cast<std::int64_t>(seen.size()));
  expect_kept_the_rules(device.checks());
}

// The copy into the slots runs on the reader threads: with several of them it is spread,
// and the thread that submits copies nothing (its tiles arrive without pixels).
TEST(Scheduling, TheReadersCopyTheirTilesIntoTheSlots) {
  const auto source = rt::make_fake_source({48, 0.0}, kTileSize);
  rt::SimulatedDevice device(jittery(13));
  CheckingConsumer consumer;
  const auto stats =
      rt::run_batches({*source, 3, rt::make_static_feed(source->tiles(), 0, 1), 12}, device, consumer, {kBatch, {}, {}})
          .stats;
  EXPECT_EQ(stats.batches, 12);
  EXPECT_GT(stats.stack_s, 0) << "the readers' copies are timed";
  expect_kept_the_rules(device.checks());
}

TEST(Scheduling, AConsumerFailureStopsTheRunAndCollectsWhatIsInFlight) {
  expect_a_consumer_failure_stops_the_run(jittery(7));
}

TEST(Scheduling, AStopMidFlightConsumesEveryBatchSubmitted) {
  expect_a_stop_mid_flight_consumes_every_batch_submitted(jittery(9));
}

// The host's work (reading) and the device's overlap: a serial loop would take the sum
// of both per batch; the pipeline takes about the larger. Generous bounds: a shared
// two-core machine.
TEST(Scheduling, HostAndDeviceWorkOverlap) {
  constexpr int kTiles = 48;
  constexpr double kReadS = 0.004;  // per tile: 16 ms a batch on one reader
  const auto source = rt::make_fake_source({kTiles, kReadS}, kTileSize);
  rt::SimulatedDeviceOptions options;
  options.compute_s = 0.016;
  options.copy_s = 0.001;
  options.copy_back_s = 0.001;
  rt::SimulatedDevice device(options);
  CheckingConsumer consumer;
  const auto stats =
      rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}})
          .stats;
  const double serial_s =
      (kTiles / kBatch) * (kBatch * kReadS + options.copy_s + options.compute_s + options.copy_back_s);
  EXPECT_LT(stats.elapsed_s, 0.8 * serial_s) << "host and device did not overlap";
}

// Counts the memory samples a run takes.
class CountingDevice final : public rt::BatchDevice {
 public:
  explicit CountingDevice(rt::BatchDevice& inner) : inner_(inner) {}
  [[nodiscard]] int slots() const override { return inner_.slots(); }
  torch::Tensor host_input(int slot, const rt::BatchShape& shape) override { return inner_.host_input(slot, shape); }
  torch::Tensor host_valid(int slot, const rt::BatchShape& shape) override { return inner_.host_valid(slot, shape); }
  void submit(int slot, std::int64_t tiles, bool with_valid) override { inner_.submit(slot, tiles, with_valid); }
  rt::CollectedBatch collect(int slot) override { return inner_.collect(slot); }
  rt::MemorySample sample_memory() override {
    ++samples;
    return {100 * samples, 100 * samples, 0, 0};
  }
  int samples = 0;

 private:
  rt::BatchDevice& inner_;
};

TEST(Scheduling, MemoryIsSampledAtMostOnceASecond) {
  const auto source = rt::make_fake_source({80, 0.0}, kTileSize);
  rt::SimulatedDeviceOptions options;
  options.compute_s = 0.001;
  rt::SimulatedDevice simulated(options);
  CountingDevice device(simulated);
  CheckingConsumer consumer;
  const auto stats =
      rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}})
          .stats;
  ASSERT_EQ(stats.batches, 20);
  const int most = 2 + static_cast<int>(stats.elapsed_s);  // the first batch, one a second, the end
  EXPECT_GE(device.samples, 2);
  EXPECT_LE(device.samples, most);
  EXPECT_EQ(stats.memory_peak_bytes, 100 * device.samples);
}

}  // namespace
