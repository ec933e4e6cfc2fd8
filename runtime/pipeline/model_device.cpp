#include "pipeline/model_device.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

#include "model/cuda_backend.hpp"
#include "pipeline/host_output.hpp"

namespace mgpr::runtime {
namespace {

torch::Tensor allocate_host_input(const BatchShape& shape, bool pinned) {
  return torch::empty({shape.batch, shape.channels, shape.height, shape.width},
                      torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned));
}

void check_slot(int slot, std::size_t slots) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots) {
    throw std::logic_error("batch slot " + std::to_string(slot) + " out of range");
  }
}

// The host computes: the forward pass runs in submit(), collect() hands its output on.
class CpuModelDevice final : public BatchDevice {
 public:
  CpuModelDevice(TileModel& model, const DeviceChoice& device)
      : model_(model), device_(device), slots_(static_cast<std::size_t>(pipeline_slots(device))) {}

  [[nodiscard]] int slots() const override { return static_cast<int>(slots_.size()); }

  torch::Tensor host_input(int slot, const BatchShape& shape) override {
    check_slot(slot, slots_.size());
    auto& input = slots_[static_cast<std::size_t>(slot)].input;
    if (!input.defined()) input = allocate_host_input(shape, false);
    return input;
  }

  void submit(int slot, std::int64_t tiles) override {
    check_slot(slot, slots_.size());
    auto& state = slots_[static_cast<std::size_t>(slot)];
    const auto started = std::chrono::steady_clock::now();
    state.output = model_.forward(state.input.narrow(0, 0, tiles));
    state.device_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  CollectedBatch collect(int slot) override {
    check_slot(slot, slots_.size());
    auto& state = slots_[static_cast<std::size_t>(slot)];
    return {std::exchange(state.output, torch::IValue()), state.device_s};
  }

  MemorySample sample_memory() override { return runtime::sample_memory(device_); }

 private:
  struct Slot {
    torch::Tensor input;
    torch::IValue output;
    double device_s = 0;
  };
  TileModel& model_;
  DeviceChoice device_;
  std::vector<Slot> slots_;
};

// The GPU computes while the host fills the next slot: every step of submit() is queued.
class CudaModelDevice final : public BatchDevice {
 public:
  CudaModelDevice(TileModel& model, const DeviceChoice& device)
      : model_(model), device_(device), slots_(static_cast<std::size_t>(pipeline_slots(device))) {
    const auto index = device.device.index();
    for (auto& slot : slots_) {
      slot.copy = cuda_backend::make_copy_stream(index);
      slot.timer = cuda_backend::make_stream_timer(index);
    }
  }

  [[nodiscard]] int slots() const override { return static_cast<int>(slots_.size()); }

  torch::Tensor host_input(int slot, const BatchShape& shape) override {
    check_slot(slot, slots_.size());
    auto& input = slots_[static_cast<std::size_t>(slot)].input;
    if (!input.defined()) input = allocate_host_input(shape, true);
    return input;
  }

  void submit(int slot, std::int64_t tiles) override {
    check_slot(slot, slots_.size());
    auto& state = slots_[static_cast<std::size_t>(slot)];
    auto on_device = state.copy->start(state.input.narrow(0, 0, tiles));
    state.copy->hand_over(on_device);  // the compute stream waits for this slot's copy
    state.timer->record_begin();
    const auto output = model_.forward(on_device);
    {
      const c10::InferenceMode inference;
      state.output = output_to_host(output, /*asynchronous=*/true);
    }
    // After the copies back: once it has passed, the host output is complete, and the
    // input was read long before.
    state.timer->record_end();
  }

  CollectedBatch collect(int slot) override {
    check_slot(slot, slots_.size());
    auto& state = slots_[static_cast<std::size_t>(slot)];
    const double device_s = state.timer->seconds();  // waits for the end event
    return {std::exchange(state.output, torch::IValue()), device_s};
  }

  MemorySample sample_memory() override { return runtime::sample_memory(device_); }

 private:
  struct Slot {
    torch::Tensor input;  // page-locked
    torch::IValue output;
    std::unique_ptr<cuda_backend::CopyStream> copy;
    std::unique_ptr<cuda_backend::StreamTimer> timer;
  };
  TileModel& model_;
  DeviceChoice device_;
  std::vector<Slot> slots_;
};

}  // namespace

int pipeline_slots(const DeviceChoice& device) { return device.is_cuda ? 3 : 2; }

std::unique_ptr<BatchDevice> make_model_device(TileModel& model, const DeviceChoice& device) {
  if (device.is_cuda) return std::make_unique<CudaModelDevice>(model, device);
  return std::make_unique<CpuModelDevice>(model, device);
}

}  // namespace mgpr::runtime
