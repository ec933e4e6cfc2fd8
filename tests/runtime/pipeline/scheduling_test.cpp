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
#include "source/fake_source.hpp"
#include "source/read_error.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace rt = mgpr::runtime;
using namespace std::chrono_literals;

constexpr int kTileSize = 8;
constexpr int kBatch = 4;

// The simulated device's output for fake tile `index`: the sum of its values and its first.
std::pair<double, float> expected_output(int index) {
  double sum = 0;
  for (int channel = 0; channel < rt::kFakeChannels; ++channel) {
    for (int y = 0; y < kTileSize; ++y) {
      for (int x = 0; x < kTileSize; ++x) sum += rt::fake_pixel(index, channel, y, x);
    }
  }
  return {sum, rt::fake_pixel(index, 0, 0, 0)};
}

// Checks each tile's output, notes the order tiles arrive in, journals them as a task
// does, and can fail at a set batch.
class CheckingConsumer final : public rt::BatchConsumer {
 public:
  explicit CheckingConsumer(rt::TileJournal* journal = nullptr, int fail_at_batch = -1)
      : journal_(journal), fail_at_batch_(fail_at_batch) {}

  void consume(std::span<const rt::TileData> tiles, const torch::IValue& output) override {
    if (batches == fail_at_batch_) throw std::runtime_error("the consumer failed (as set)");
    const auto rows = output.toTensor();
    EXPECT_TRUE(rows.device().is_cpu());
    EXPECT_EQ(rows.size(0), static_cast<std::int64_t>(tiles.size()));
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const int index = tiles[i].tile.id.row;  // fake tile i is TileId{0, i, 0}
      // The reader that read the tile put it into its row; the pixels stayed with it.
      EXPECT_TRUE(tiles[i].pixels.empty() && tiles[i].bytes.empty()) << "tile " << index;
      EXPECT_TRUE(tiles[i].placed.has_value() && tiles[i].placed->row == static_cast<int>(i)) << "tile " << index;
      const auto [sum, first] = expected_output(index);
      EXPECT_NEAR(rows[static_cast<std::int64_t>(i)][0].item<double>(), sum, 1e-3) << "tile " << index;
      EXPECT_EQ(rows[static_cast<std::int64_t>(i)][1].item<float>(), first) << "tile " << index;
      order.push_back(index);
      if (journal_ != nullptr) journal_->append(tiles[i].tile.id, std::to_string(index));
    }
    if (journal_ != nullptr) journal_->flush();
    ++batches;
  }

  std::vector<int> order;
  int batches = 0;

 private:
  rt::TileJournal* journal_;
  int fail_at_batch_;
};

rt::SimulatedDeviceOptions jittery(std::uint32_t seed) {
  rt::SimulatedDeviceOptions options;
  options.slots = 3;
  options.copy_s = 0.001;
  options.compute_s = 0.004;
  options.copy_back_s = 0.001;
  options.jitter = 0.9;
  options.seed = seed;
  return options;
}

// A detector-shaped device: each forward pass holds its calling thread for its host work
// and then until the device is done with the batch.
rt::SimulatedDeviceOptions blocking(rt::SimulatedDeviceOptions options, double host_s) {
  options.blocking_forward = true;
  options.forward_host_s = host_s;
  return options;
}

void expect_kept_the_rules(const rt::SimulatedDeviceChecks& checks) {
  EXPECT_EQ(checks.input_taken_in_flight, 0) << "a slot's input was taken for writing while in flight";
  EXPECT_EQ(checks.input_changed_before_copy, 0) << "a slot's input changed before the device copied it";
  EXPECT_EQ(checks.submitted_in_flight, 0);
  EXPECT_EQ(checks.collected_out_of_order, 0);
  EXPECT_EQ(checks.collected_not_submitted, 0);
  EXPECT_EQ(checks.forward_not_submitted, 0);
}

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

// The device fails batch 3: batches 0-2 are journaled, nothing after them, and the run
// ends with the device's error. Returns the device's checks, the rules already expected.
rt::SimulatedDeviceChecks expect_a_failure_mid_flight_keeps_every_batch_before_it(rt::SimulatedDeviceOptions options) {
  mgpr::test::TempDir journal_dir;
  const auto source = rt::make_fake_source({40, 0.0}, kTileSize);
  options.fail_batch = 3;
  rt::SimulatedDevice device(options);
  {
    rt::TileJournal journal(journal_dir.path(), 0);
    CheckingConsumer journaling(&journal);
    try {
      rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, journaling,
                      {kBatch, {}, {}});
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("failed batch 3"), std::string::npos) << error.what();
    }
    EXPECT_EQ(journaling.batches, 3);
  }
  const auto journaled = rt::read_journals(journal_dir.path());
  EXPECT_EQ(journaled.size(), 12U);
  int index = 0;
  for (const auto& [id, payload] : journaled) EXPECT_EQ(id.row, index++);
  const auto checks = device.checks();
  expect_kept_the_rules(checks);
  return checks;
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

// The consumer fails on its third batch: the run ends with that error, what is in flight
// is collected, and no more batches are submitted.
void expect_a_consumer_failure_stops_the_run(const rt::SimulatedDeviceOptions& options) {
  const auto source = rt::make_fake_source({60, 0.0}, kTileSize);
  rt::SimulatedDevice device(options);
  CheckingConsumer consumer(nullptr, 2);
  EXPECT_THROW(
      rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}}),
      std::runtime_error);
  EXPECT_EQ(consumer.batches, 2);
  const auto checks = device.checks();
  EXPECT_LT(checks.batches, 15) << "batches were still submitted after the consumer failed";
  expect_kept_the_rules(checks);
}

TEST(Scheduling, AConsumerFailureStopsTheRunAndCollectsWhatIsInFlight) {
  expect_a_consumer_failure_stops_the_run(jittery(7));
}

// A stop (the feed gives no more tiles, as on SIGTERM) mid-flight: every batch submitted
// is consumed and journaled before run_batches returns, so a resumed run has exactly the
// tiles never fed left to do.
void expect_a_stop_mid_flight_consumes_every_batch_submitted(const rt::SimulatedDeviceOptions& device_options) {
  mgpr::test::TempDir journal_dir;
  const auto source = rt::make_fake_source({200, 0.0}, kTileSize);
  std::atomic<bool> stop{false};
  auto inner = rt::make_static_feed(source->tiles(), 0, 1);
  rt::TileFeed feed = [&]() -> std::optional<rt::Tile> {
    if (stop) return std::nullopt;
    return inner();
  };
  rt::SimulatedDevice device(device_options);
  rt::PipelineOptions options;
  options.batch_size = kBatch;
  options.on_batch = [&](const rt::PipelineStats& running) {
    if (running.batches == 5) stop = true;
  };
  rt::PipelineStats stats;
  std::vector<int> consumed;
  {
    rt::TileJournal journal(journal_dir.path(), 0);
    CheckingConsumer consumer(&journal);
    stats = rt::run_batches({*source, 2, feed, 8}, device, consumer, options).stats;
    consumed = consumer.order;
  }
  EXPECT_EQ(stats.batches, device.checks().batches);
  EXPECT_EQ(static_cast<std::size_t>(stats.tiles), consumed.size());
  EXPECT_LT(stats.tiles, 200);
  // The feed gives tiles in order and stops: what was consumed is its first tiles, each
  // once (two readers may swap neighbours within a batch).
  std::sort(consumed.begin(), consumed.end());
  for (std::size_t i = 0; i < consumed.size(); ++i) EXPECT_EQ(consumed[i], static_cast<int>(i));
  const auto journaled = rt::read_journals(journal_dir.path());
  ASSERT_EQ(journaled.size(), consumed.size());
  int index = 0;
  for (const auto& [id, payload] : journaled) {
    EXPECT_EQ(id.row, index);
    EXPECT_EQ(payload, std::to_string(index));
    ++index;
  }
  expect_kept_the_rules(device.checks());
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

// Blocking forward passes (a detector's): they run on threads of their own, two at
// once, so the device holds two batches while the host fills the third, and the run takes
// about the device's own time, not the device's plus each pass's host work.
TEST(BlockingForward, TwoBatchesStayOnTheDeviceAndTheRunTakesTheDevicesTime) {
  constexpr int kTiles = 120;  // 30 batches
  rt::SimulatedDeviceOptions options;
  options.copy_s = 0.002;
  options.compute_s = 0.020;
  options.copy_back_s = 0.001;
  const auto source = rt::make_fake_source({kTiles, 0.0}, kTileSize);
  rt::SimulatedDevice device(blocking(options, 0.015));
  ASSERT_TRUE(device.forward_blocks());
  CheckingConsumer consumer;
  const auto stats =
      rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}})
          .stats;
  EXPECT_EQ(stats.tiles, kTiles);
  std::vector<int> in_order(kTiles);
  for (int i = 0; i < kTiles; ++i) in_order[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(consumer.order, in_order);
  const auto checks = device.checks();
  expect_kept_the_rules(checks);
  EXPECT_GE(checks.most_forwards_at_once, 2) << "the passes ran one at a time";
  EXPECT_LE(checks.most_forwards_at_once, 2) << "more passes at once than the slots less the one being filled";
  EXPECT_GE(checks.most_on_device, 2) << "the device never held two batches at once";
  // The device's own time: compute and copy back, batch after batch (0.63 s). One pass at
  // a time would add each pass's host work and copy (1.14 s). Generous: a shared
  // two-core machine.
  const double device_s = checks.busy_s;
  const double serial_s = (kTiles / kBatch) * (0.015 + options.copy_s + options.compute_s + options.copy_back_s);
  EXPECT_LT(stats.elapsed_s, 1.25 * device_s + 0.05) << "end to end " << stats.elapsed_s << " s against the device's "
                                                     << device_s << " s (one pass at a time: " << serial_s << " s)";
}

// What the pipeline did before blocking passes had threads of their own: the pass run by
// the thread that submits. The device never holds more than the batch of that pass.
class ForwardOnTheSubmittingThread final : public rt::BatchDevice {
 public:
  explicit ForwardOnTheSubmittingThread(rt::BatchDevice& inner) : inner_(inner) {}
  [[nodiscard]] int slots() const override { return inner_.slots(); }
  torch::Tensor host_input(int slot, const rt::BatchShape& shape) override { return inner_.host_input(slot, shape); }
  torch::Tensor host_valid(int slot, const rt::BatchShape& shape) override { return inner_.host_valid(slot, shape); }
  void submit(int slot, std::int64_t tiles, bool with_valid) override {
    inner_.submit(slot, tiles, with_valid);
    inner_.forward(slot);
  }
  rt::CollectedBatch collect(int slot) override { return inner_.collect(slot); }
  rt::MemorySample sample_memory() override { return inner_.sample_memory(); }

 private:
  rt::BatchDevice& inner_;
};

TEST(BlockingForward, OnTheSubmittingThreadTheDeviceHoldsOneBatch) {
  rt::SimulatedDeviceOptions options;
  options.compute_s = 0.005;
  options.copy_back_s = 0.001;
  const auto source = rt::make_fake_source({32, 0.0}, kTileSize);
  rt::SimulatedDevice simulated(blocking(options, 0.003));
  ForwardOnTheSubmittingThread device(simulated);
  CheckingConsumer consumer;
  rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer, {kBatch, {}, {}});
  const auto checks = simulated.checks();
  expect_kept_the_rules(checks);
  EXPECT_EQ(checks.most_on_device, 1);
  EXPECT_EQ(checks.most_forwards_at_once, 1);
}

TEST(BlockingForward, EveryTileGetsItsOwnOutputInOrderWithJitter) {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) {
    const auto source = rt::make_fake_source({37, 0.0}, kTileSize);
    rt::SimulatedDevice device(blocking(jittery(seed), 0.003));
    CheckingConsumer consumer;
    const auto stats = rt::run_batches({*source, 1, rt::make_static_feed(source->tiles(), 0, 1), 8}, device, consumer,
                                       {kBatch, {}, {}})
                           .stats;
    EXPECT_EQ(stats.tiles, 37);
    EXPECT_EQ(stats.batches, 10);
    std::vector<int> in_order(37);
    for (int i = 0; i < 37; ++i) in_order[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(consumer.order, in_order) << "seed " << seed;
    expect_kept_the_rules(device.checks());
    EXPECT_GT(stats.model_s, 0);
  }
}

// The device fails batch 3's pass: as above, and the passes already started are waited
// for, and nothing more is submitted after the failure.
TEST(BlockingForward, AFailedPassKeepsEveryBatchBeforeIt) {
  const auto checks = expect_a_failure_mid_flight_keeps_every_batch_before_it(blocking(jittery(3), 0.002));
  EXPECT_LT(checks.batches, 10) << "batches were still submitted after the pass failed";
}

TEST(BlockingForward, AStopMidFlightConsumesEveryBatchSubmitted) {
  expect_a_stop_mid_flight_consumes_every_batch_submitted(blocking(jittery(9), 0.002));
}

TEST(BlockingForward, AConsumerFailureStopsTheRunAndWaitsForThePassesInFlight) {
  expect_a_consumer_failure_stops_the_run(blocking(jittery(7), 0.002));
}

// Which models' passes run apart: those whose output has per-tile dicts (torchvision's
// detectors, whose forward filters boxes by score and so waits for the GPU).
TEST(BlockingForward, DetectorShapedOutputsAreTheBlockingOnes) {
  const auto tensor = torch::zeros({2, 3});
  c10::Dict<std::string, torch::Tensor> boxes;
  boxes.insert("boxes", torch::zeros({0, 4}));
  boxes.insert("scores", torch::zeros({0}));
  c10::List<c10::Dict<std::string, torch::Tensor>> per_tile;
  per_tile.push_back(boxes);
  EXPECT_TRUE(rt::forward_blocks_host(per_tile));
  EXPECT_TRUE(rt::forward_blocks_host(c10::ivalue::Tuple::create({c10::Dict<std::string, torch::Tensor>(), per_tile})))
      << "torchvision's scripted (losses, detections)";
  EXPECT_TRUE(rt::forward_blocks_host(c10::List<c10::Dict<std::string, torch::Tensor>>()))
      << "a list typed as dicts, even empty";
  EXPECT_FALSE(rt::forward_blocks_host(tensor)) << "a classifier's logits or a [B, N, 6] detector's rows";
  EXPECT_FALSE(rt::forward_blocks_host(c10::List<torch::Tensor>({tensor, tensor})));
  EXPECT_FALSE(rt::forward_blocks_host(boxes)) << "one dict of batch tensors (a segmenter's {'out': ...})";
  EXPECT_FALSE(rt::forward_blocks_host(c10::ivalue::Tuple::create({tensor, tensor})));
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
