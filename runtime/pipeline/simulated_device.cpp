#include "pipeline/simulated_device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mgpr::runtime {
// Named, not anonymous: the device's State (a type of the header's) holds two of them.
namespace simulated_device {

// Runs its work in the order queued, one item at a time, on a thread of its own: what a
// CUDA stream is to the host.
class InOrderEngine {
 public:
  InOrderEngine() : thread_([this](const std::stop_token& stop) { run(stop); }) {}
  ~InOrderEngine() {
    thread_.request_stop();
    wake_.notify_all();
  }
  InOrderEngine(const InOrderEngine&) = delete;
  InOrderEngine& operator=(const InOrderEngine&) = delete;

  void queue(std::function<void()> work) {
    {
      const std::lock_guard lock(mutex_);
      work_.push_back(std::move(work));
    }
    wake_.notify_all();
  }

 private:
  void run(const std::stop_token& stop) {
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop.stop_requested() || !work_.empty(); });
        if (stop.stop_requested()) return;
        work = std::move(work_.front());
        work_.pop_front();
      }
      work();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> work_;
  std::jthread thread_;  // last: stops before the queue goes away
};

}  // namespace simulated_device

namespace {

// A cheap fingerprint of a slot's input: enough values spread over it that a tile written
// into the slot changes it.
double fingerprint(const float* values, std::int64_t count) {
  const std::int64_t stride = std::max<std::int64_t>(1, count / 65536);
  double sum = 0;
  for (std::int64_t i = 0; i < count; i += stride) sum += static_cast<double>(values[i]) * static_cast<double>(i + 1);
  return sum;
}

}  // namespace

struct SimulatedDevice::State {
  struct Slot {
    torch::Tensor input;
    torch::Tensor valid;
    std::vector<float> on_device;  // the input as copied
    std::int64_t tiles = 0;
    double fingerprint = 0;
    bool in_flight = false;
    bool awaiting_forward = false;  // submitted to a blocking device, forward() not yet called
    bool copied = false;
    bool done = false;
    bool failed = false;
    std::int64_t batch = 0;
    double busy_s = 0;
    torch::Tensor output;
  };

  explicit State(const SimulatedDeviceOptions& chosen)
      : options(chosen), slots(static_cast<std::size_t>(std::max(1, chosen.slots))), random(chosen.seed) {}

  Slot& slot_at(int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= slots.size()) {
      throw std::logic_error(fmt::format("batch slot {} out of range", slot));
    }
    return slots[static_cast<std::size_t>(slot)];
  }

  // Sleeps `seconds` scaled by the jitter; returns the time slept.
  double spend(double seconds) {
    double factor = 1;
    if (options.jitter > 0) {
      const std::lock_guard lock(mutex);
      factor = std::uniform_real_distribution<double>(1 - options.jitter, 1 + options.jitter)(random);
    }
    const double spent = std::max(0.0, seconds * factor);
    std::this_thread::sleep_for(std::chrono::duration<double>(spent));
    return spent;
  }

  void copy(int index) {
    spend(options.copy_s);
    const std::lock_guard lock(mutex);
    auto& slot = slot_at(index);
    if (options.read_inputs) {
      const auto values = slot.input.narrow(0, 0, slot.tiles).to(torch::kFloat).contiguous();
      const auto* data = values.data_ptr<float>();
      slot.on_device.assign(data, data + values.numel());
      if (fingerprint(data, values.numel()) != slot.fingerprint) ++checks.input_changed_before_copy;
    }
    slot.copied = true;
    changed.notify_all();
  }

  void compute(int index) {
    std::int64_t tiles = 0;
    bool fails = false;
    {
      std::unique_lock lock(mutex);
      auto& slot = slot_at(index);
      // The compute stream waits for the copy's event.
      changed.wait(lock, [&] { return slot.copied || closing; });
      if (closing) return;
      tiles = slot.tiles;
      fails = slot.batch == options.fail_batch;
    }
    double busy = spend(options.compute_s);
    auto output = torch::zeros({tiles, 2});
    if (options.read_inputs && !fails) {
      const std::lock_guard lock(mutex);
      const auto& slot = slot_at(index);
      const auto per_tile = static_cast<std::int64_t>(slot.on_device.size()) / std::max<std::int64_t>(1, tiles);
      auto rows = output.accessor<float, 2>();
      for (std::int64_t tile = 0; tile < tiles; ++tile) {
        const float* values = slot.on_device.data() + tile * per_tile;
        double sum = 0;
        for (std::int64_t i = 0; i < per_tile; ++i) sum += values[i];
        rows[tile][0] = static_cast<float>(sum);
        rows[tile][1] = values[0];
      }
    }
    if (!fails) busy += spend(options.copy_back_s);
    const std::lock_guard lock(mutex);
    auto& slot = slot_at(index);
    slot.output = std::move(output);
    slot.failed = fails;
    slot.busy_s = busy;
    slot.done = true;
    checks.busy_s += busy;
    --on_device;
    changed.notify_all();
  }

  // Under the lock: the batch's compute and copy back queued after its copy.
  void queue_compute(int index) {
    ++on_device;
    checks.most_on_device = std::max(checks.most_on_device, on_device);
    compute_engine.queue([this, index] { compute(index); });
  }

  SimulatedDeviceOptions options;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::vector<Slot> slots;
  std::deque<int> in_flight;  // submission order
  std::mt19937 random;
  std::int64_t submitted = 0;
  int on_device = 0;         // batches queued on the compute engine and not done
  int forwards_running = 0;  // blocking forward() calls running now
  bool closing = false;      // set when the device goes away: work waiting for a copy gives up
  SimulatedDeviceChecks checks;
  // Last: their threads stop, and finish the item they run, before the slots go away.
  simulated_device::InOrderEngine compute_engine;
  simulated_device::InOrderEngine copy_engine;
};

SimulatedDevice::SimulatedDevice(const SimulatedDeviceOptions& options) : state_(std::make_unique<State>(options)) {}

SimulatedDevice::~SimulatedDevice() {
  {
    const std::lock_guard lock(state_->mutex);
    state_->closing = true;
  }
  state_->changed.notify_all();
}

int SimulatedDevice::slots() const { return static_cast<int>(state_->slots.size()); }

torch::Tensor SimulatedDevice::host_input(int slot, const BatchShape& shape) {
  const std::lock_guard lock(state_->mutex);
  auto& state = state_->slot_at(slot);
  if (state.in_flight) ++state_->checks.input_taken_in_flight;
  if (!state.input.defined()) {
    state.input = torch::empty({shape.batch, shape.channels, shape.height, shape.width}, shape.dtype);
  }
  return state.input;
}

torch::Tensor SimulatedDevice::host_valid(int slot, const BatchShape& shape) {
  const std::lock_guard lock(state_->mutex);
  auto& state = state_->slot_at(slot);
  if (state.in_flight) ++state_->checks.input_taken_in_flight;
  if (!state.valid.defined()) state.valid = torch::empty({shape.batch, shape.height, shape.width}, torch::kByte);
  return state.valid;
}

// The valid masks travel with the input; the simulated work does not look at them.
void SimulatedDevice::submit(int slot, std::int64_t tiles, bool /*with_valid*/) {
  {
    const std::lock_guard lock(state_->mutex);
    auto& state = state_->slot_at(slot);
    if (state.in_flight) ++state_->checks.submitted_in_flight;
    state.tiles = tiles;
    if (state_->options.read_inputs) {
      const auto values = state.input.narrow(0, 0, tiles).to(torch::kFloat).contiguous();
      state.fingerprint = fingerprint(values.data_ptr<float>(), values.numel());
    }
    state.in_flight = true;
    state.copied = false;
    state.done = false;
    state.batch = state_->submitted++;
    state_->in_flight.push_back(slot);
    state_->checks.batches = state_->submitted;
    state_->checks.most_in_flight = std::max(state_->checks.most_in_flight, static_cast<int>(state_->in_flight.size()));
    // In the lock, so the copy engine sees the batch in the order submitted.
    state_->copy_engine.queue([this, slot] { state_->copy(slot); });
    // A blocking device's compute is queued by forward(), as a detector's pass launches
    // its own kernels.
    state.awaiting_forward = state_->options.blocking_forward;
    if (!state.awaiting_forward) state_->queue_compute(slot);
  }
}

bool SimulatedDevice::forward_blocks() const { return state_->options.blocking_forward; }

void SimulatedDevice::forward(int slot) {
  std::unique_lock lock(state_->mutex);
  auto& state = state_->slot_at(slot);
  if (!state.in_flight || !state.awaiting_forward) {
    ++state_->checks.forward_not_submitted;
    return;
  }
  state.awaiting_forward = false;
  state_->checks.most_forwards_at_once = std::max(state_->checks.most_forwards_at_once, ++state_->forwards_running);
  lock.unlock();
  state_->spend(state_->options.forward_host_s);
  lock.lock();
  state_->queue_compute(slot);
  // The pass holds its thread until the device is done with the batch.
  state_->changed.wait(lock, [&] { return state.done || state_->closing; });
  --state_->forwards_running;
}

CollectedBatch SimulatedDevice::collect(int slot) {
  std::unique_lock lock(state_->mutex);
  auto& state = state_->slot_at(slot);
  auto& order = state_->in_flight;
  if (!state.in_flight) {
    ++state_->checks.collected_not_submitted;
    throw std::logic_error(fmt::format("collect() of batch slot {}, which is not in flight", slot));
  }
  if (order.front() != slot) ++state_->checks.collected_out_of_order;
  state_->changed.wait(lock, [&] { return state.done; });
  order.erase(std::find(order.begin(), order.end(), slot));
  state.in_flight = false;
  if (state.failed) {
    throw std::runtime_error(fmt::format("the simulated device failed batch {} (as set)", state.batch));
  }
  return {std::move(state.output), state.busy_s};
}

SimulatedDeviceChecks SimulatedDevice::checks() const {
  const std::lock_guard lock(state_->mutex);
  return state_->checks;
}

}  // namespace mgpr::runtime
