// The pipeline with a device whose forward pass holds its calling thread (a detector:
// torchvision's filters boxes by score, so the host waits for the GPU): each slot's pass
// runs on a thread of its own, so two batches stay on the device, tiles keep their order,
// and failures and stops lose nothing, as with any device.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "distributed/sharding.hpp"
#include "pipeline/model_device.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/simulated_device.hpp"
#include "scheduling_support.hpp"
#include "source/fake_source.hpp"

namespace {

namespace rt = mgpr::runtime;
using namespace mgpr::test::scheduling;

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

}  // namespace
