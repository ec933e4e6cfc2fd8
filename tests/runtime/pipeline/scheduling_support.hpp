#pragma once
// What the scheduling tests share (scheduling_test.cpp, blocking_forward_test.cpp): fake
// tiles and their expected outputs, a consumer that checks and journals them, the
// simulated device's settings, its rules, and the failure and stop scenarios every kind of
// device must come through the same way.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/sharding.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/simulated_device.hpp"
#include "resume/tile_journal.hpp"
#include "source/fake_source.hpp"
#include "support/temp_dir.hpp"

namespace mgpr::test::scheduling {

namespace rt = mgpr::runtime;

constexpr int kTileSize = 8;
constexpr int kBatch = 4;

// The simulated device's output for fake tile `index`: the sum of its values and its first.
inline std::pair<double, float> expected_output(int index) {
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

inline rt::SimulatedDeviceOptions jittery(std::uint32_t seed) {
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
inline rt::SimulatedDeviceOptions blocking(rt::SimulatedDeviceOptions options, double host_s) {
  options.blocking_forward = true;
  options.forward_host_s = host_s;
  return options;
}

inline void expect_kept_the_rules(const rt::SimulatedDeviceChecks& checks) {
  EXPECT_EQ(checks.input_taken_in_flight, 0) << "a slot's input was taken for writing while in flight";
  EXPECT_EQ(checks.input_changed_before_copy, 0) << "a slot's input changed before the device copied it";
  EXPECT_EQ(checks.submitted_in_flight, 0);
  EXPECT_EQ(checks.collected_out_of_order, 0);
  EXPECT_EQ(checks.collected_not_submitted, 0);
  EXPECT_EQ(checks.forward_not_submitted, 0);
}

// The device fails batch 3: batches 0-2 are journaled, nothing after them, and the run
// ends with the device's error. Returns the device's checks, the rules already expected.
inline rt::SimulatedDeviceChecks expect_a_failure_mid_flight_keeps_every_batch_before_it(
    rt::SimulatedDeviceOptions options) {
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

// The consumer fails on its third batch: the run ends with that error, what is in flight
// is collected, and no more batches are submitted.
inline void expect_a_consumer_failure_stops_the_run(const rt::SimulatedDeviceOptions& options) {
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

// A stop (the feed gives no more tiles, as on SIGTERM) mid-flight: every batch submitted
// is consumed and journaled before run_batches returns, so a resumed run has exactly the
// tiles never fed left to do.
inline void expect_a_stop_mid_flight_consumes_every_batch_submitted(const rt::SimulatedDeviceOptions& device_options) {
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

}  // namespace mgpr::test::scheduling
