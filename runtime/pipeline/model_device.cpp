#include "pipeline/model_device.hpp"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <vector>

#include "model/cuda_backend.hpp"
#include "pipeline/host_output.hpp"
#include "pipeline/raw_scaler.hpp"

namespace mgpr::runtime {
namespace {

torch::Tensor allocate_host_input(const BatchShape& shape, bool pinned) {
  return torch::empty({shape.batch, shape.channels, shape.height, shape.width},
                      torch::TensorOptions().dtype(shape.dtype).pinned_memory(pinned));
}

torch::Tensor allocate_host_valid(const BatchShape& shape, bool pinned) {
  return torch::empty({shape.batch, shape.height, shape.width},
                      torch::TensorOptions().dtype(torch::kByte).pinned_memory(pinned));
}

// The model's input from the slot's rows on the device: raw ones scaled first.
torch::Tensor model_input(const torch::Tensor& input, const torch::Tensor& valid,
                          const std::optional<RawScaler>& scaler) {
  if (input.scalar_type() == torch::kFloat) return input;
  if (!scaler) throw std::logic_error("a raw batch without its scaling");
  const c10::InferenceMode inference;
  return (*scaler)(input, valid);
}

void check_slot(int slot, std::size_t slots) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots) {
    throw std::logic_error("batch slot " + std::to_string(slot) + " out of range");
  }
}

// The host computes: the forward pass runs in submit(), collect() hands its output on.
class CpuModelDevice final : public BatchDevice {
 public:
  CpuModelDevice(TileModel& model, const DeviceChoice& device, const std::optional<RawScaling>& raw)
      : model_(model), device_(device), slots_(static_cast<std::size_t>(pipeline_slots(device))) {
    if (raw) scaler_.emplace(*raw, torch::Device(torch::kCPU));
  }

  [[nodiscard]] int slots() const override { return static_cast<int>(slots_.size()); }

  torch::Tensor host_input(int slot, const BatchShape& shape) override {
    check_slot(slot, slots_.size());
    auto& input = slots_[static_cast<std::size_t>(slot)].input;
    if (!input.defined()) input = allocate_host_input(shape, false);
    return input;
  }

  torch::Tensor host_valid(int slot, const BatchShape& shape) override {
    check_slot(slot, slots_.size());
    auto& valid = slots_[static_cast<std::size_t>(slot)].valid;
    if (!valid.defined()) valid = allocate_host_valid(shape, false);
    return valid;
  }

  void submit(int slot, std::int64_t tiles, bool with_valid) override {
    check_slot(slot, slots_.size());
    auto& state = slots_[static_cast<std::size_t>(slot)];
    const auto started = std::chrono::steady_clock::now();
    const auto valid = with_valid ? state.valid.narrow(0, 0, tiles) : torch::Tensor();
    state.output = model_.forward(model_input(state.input.narrow(0, 0, tiles), valid, scaler_));
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
    torch::Tensor valid;
    torch::IValue output;
    double device_s = 0;
  };
  TileModel& model_;
  DeviceChoice device_;
  std::optional<RawScaler> scaler_;
  std::vector<Slot> slots_;
};

// The GPU computes while the host fills the next slot: every step of submit() is queued.
class CudaModelDevice final : public BatchDevice {
 public:
  CudaModelDevice(TileModel& model, const DeviceChoice& device, const std::optional<RawScaling>& raw)
      : model_(model), device_(device), slots_(static_cast<std::size_t>(pipeline_slots(device))) {
    if (raw) scaler_.emplace(*raw, device.device);
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

  torch::Tensor host_valid(int slot, const BatchShape& shape) override {
    check_slot(slot, slots_.size());
    auto& valid = slots_[static_cast<std::size_t>(slot)].valid;
    if (!valid.defined()) valid = allocate_host_valid(shape, true);
    return valid;
  }

  void submit(int slot, std::int64_t tiles, bool with_valid) override {
    check_slot(slot, slots_.size());
    auto& state = slots_[static_cast<std::size_t>(slot)];
    auto on_device = state.copy->start(state.input.narrow(0, 0, tiles));
    torch::Tensor valid;
    if (with_valid) valid = state.copy->start(state.valid.narrow(0, 0, tiles));
    // The compute stream waits for this slot's copies (the event follows the last).
    state.copy->hand_over(on_device);
    if (valid.defined()) state.copy->hand_over(valid);
    state.timer->record_begin();
    const auto output = model_.forward(model_input(on_device, valid, scaler_));
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
    torch::Tensor input;  // page-locked, as is valid
    torch::Tensor valid;
    torch::IValue output;
    std::unique_ptr<cuda_backend::CopyStream> copy;
    std::unique_ptr<cuda_backend::StreamTimer> timer;
  };
  TileModel& model_;
  DeviceChoice device_;
  std::optional<RawScaler> scaler_;  // on the GPU
  std::vector<Slot> slots_;
};

}  // namespace

int pipeline_slots(const DeviceChoice& device) { return device.is_cuda ? 3 : 2; }

std::unique_ptr<BatchDevice> make_model_device(TileModel& model, const DeviceChoice& device,
                                               const std::optional<RawScaling>& raw) {
  if (device.is_cuda) return std::make_unique<CudaModelDevice>(model, device, raw);
  return std::make_unique<CpuModelDevice>(model, device, raw);
}

}  // namespace mgpr::runtime
