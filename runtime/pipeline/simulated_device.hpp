#pragma once
// A device that behaves like a GPU without one: a copy engine and a compute engine, each
// a thread that runs its work in order, as a CUDA stream does, with set latencies and
// random jitter. The pipeline's scheduling is tested and benchmarked on it
// (tests/runtime/pipeline, bench/fake_device_bench.cpp), so the rules a GPU's asynchrony
// imposes are checked on a machine without one: the device checks, batch by batch, that
// the pipeline keeps them.
#include <cstdint>
#include <memory>

#include "pipeline/batch_device.hpp"

namespace mgpr::runtime {

struct SimulatedDeviceOptions {
  int slots = 3;
  double copy_s = 0.002;       // each batch's copy to the device
  double compute_s = 0.028;    // its forward pass
  double copy_back_s = 0.001;  // its output back to the host
  // Each latency is scaled by a factor drawn evenly from [1 - jitter, 1 + jitter].
  double jitter = 0.0;
  std::uint32_t seed = 1;
  // The batch (0-based, in submission order) whose forward pass fails; -1: none does.
  std::int64_t fail_batch = -1;
  // Copies the host input at the copy (checking it still holds what submit() saw) and
  // computes each tile's output from that copy. Off: the latencies alone, for benchmarks
  // at full tile sizes, and the output is zeros.
  bool read_inputs = true;
  // A detector-shaped device (BatchDevice::forward_blocks): submit() queues only the copy,
  // and forward() holds its calling thread for the batch, as a detector's forward pass
  // holds the host until it has the scores to filter its boxes by. It spends
  // forward_host_s on that thread first (the pass's own host work: the interpreter, the
  // launches, the host's share of the post-processing), then queues the compute and the
  // copy back and waits for both.
  bool blocking_forward = false;
  double forward_host_s = 0.0;
};

// What the device saw the pipeline do wrong (all zero for a correct one), and how busy
// it was.
struct SimulatedDeviceChecks {
  std::int64_t input_taken_in_flight = 0;      // host_input() of a slot submitted and not collected
  std::int64_t input_changed_before_copy = 0;  // a slot's input changed between submit() and its copy
  std::int64_t submitted_in_flight = 0;        // submit() of a slot submitted and not collected
  std::int64_t collected_out_of_order = 0;     // collect() of a slot other than the oldest in flight
  std::int64_t collected_not_submitted = 0;    // collect() of a slot not in flight
  std::int64_t forward_not_submitted = 0;      // forward() of a slot not submitted, or not blocking, or twice
  int most_in_flight = 0;                      // batches submitted and not collected, at most
  std::int64_t batches = 0;                    // submitted
  double busy_s = 0;                           // compute and copy back, summed over batches
  // Batches queued on the compute engine or computing there, at most: what a GPU holds
  // at once. A blocking forward run on the submitting thread never gets past 1.
  int most_on_device = 0;
  int most_forwards_at_once = 0;  // blocking forward() calls running at once, at most
};

class SimulatedDevice final : public BatchDevice {
 public:
  explicit SimulatedDevice(const SimulatedDeviceOptions& options);
  ~SimulatedDevice() override;
  SimulatedDevice(const SimulatedDevice&) = delete;
  SimulatedDevice& operator=(const SimulatedDevice&) = delete;

  [[nodiscard]] int slots() const override;
  torch::Tensor host_input(int slot, const BatchShape& shape) override;
  torch::Tensor host_valid(int slot, const BatchShape& shape) override;
  void submit(int slot, std::int64_t tiles, bool with_valid) override;
  [[nodiscard]] bool forward_blocks() const override;
  void forward(int slot) override;
  // Each tile's output is a row of [tiles, 2] floats: the sum of the tile's values (as
  // copied to the device, raw ones unscaled) and its first value.
  CollectedBatch collect(int slot) override;
  MemorySample sample_memory() override { return {}; }

  [[nodiscard]] SimulatedDeviceChecks checks() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mgpr::runtime
