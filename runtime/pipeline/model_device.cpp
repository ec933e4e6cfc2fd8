#include "pipeline/model_device.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>
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

// The slots' host inputs and valid masks, allocated at first use and kept; page-locked
// for a GPU, so its copies are asynchronous.
class HostBuffers {
 public:
  HostBuffers(int slots, bool pinned) : slots_(static_cast<std::size_t>(slots)), pinned_(pinned) {}

  [[nodiscard]] int size() const { return static_cast<int>(slots_.size()); }
  torch::Tensor input(int slot, const BatchShape& shape) {
    auto& input = at(slot).input;
    if (!input.defined()) input = allocate_host_input(shape, pinned_);
    return input;
  }
  torch::Tensor valid(int slot, const BatchShape& shape) {
    auto& valid = at(slot).valid;
    if (!valid.defined()) valid = allocate_host_valid(shape, pinned_);
    return valid;
  }
  // The first `tiles` rows of what the slot holds; valid undefined unless `with_valid`.
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> rows(int slot, std::int64_t tiles, bool with_valid) {
    auto& buffers = at(slot);
    return {buffers.input.narrow(0, 0, tiles), with_valid ? buffers.valid.narrow(0, 0, tiles) : torch::Tensor()};
  }

 private:
  struct Buffers {
    torch::Tensor input;
    torch::Tensor valid;
  };
  Buffers& at(int slot) {
    check_slot(slot, slots_.size());
    return slots_[static_cast<std::size_t>(slot)];
  }
  std::vector<Buffers> slots_;
  bool pinned_;
};

// The host computes: the forward pass runs in submit(), collect() hands its output on.
class CpuModelDevice final : public BatchDevice {
 public:
  CpuModelDevice(TileModel& model, const DeviceChoice& device, const std::optional<RawScaling>& raw)
      : model_(model), device_(device), buffers_(pipeline_slots(device), false), results_(buffers_.size()) {
    if (raw) scaler_.emplace(*raw, torch::Device(torch::kCPU));
  }

  [[nodiscard]] int slots() const override { return buffers_.size(); }
  torch::Tensor host_input(int slot, const BatchShape& shape) override { return buffers_.input(slot, shape); }
  torch::Tensor host_valid(int slot, const BatchShape& shape) override { return buffers_.valid(slot, shape); }

  void submit(int slot, std::int64_t tiles, bool with_valid) override {
    const auto [input, valid] = buffers_.rows(slot, tiles, with_valid);
    const auto started = std::chrono::steady_clock::now();
    auto& result = results_[static_cast<std::size_t>(slot)];
    // Raw tiles are scaled a pass at a time: the float32 copy of the whole batch would
    // cost four times the raw slot (8-bit) for no speed.
    result.output = model_.forward(tiles, [&](std::int64_t first, std::int64_t count) {
      return model_input(input.narrow(0, first, count), valid.defined() ? valid.narrow(0, first, count) : valid,
                         scaler_);
    });
    result.device_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  CollectedBatch collect(int slot) override {
    check_slot(slot, results_.size());
    auto& result = results_[static_cast<std::size_t>(slot)];
    return {std::exchange(result.output, torch::IValue()), result.device_s};
  }

  MemorySample sample_memory() override { return runtime::sample_memory(device_); }

 private:
  TileModel& model_;
  DeviceChoice device_;
  std::optional<RawScaler> scaler_;
  HostBuffers buffers_;
  std::vector<CollectedBatch> results_;
};

// The GPU computes while the host fills the next slot: every step of submit() is queued.
// A model whose forward pass holds the host (forward_blocks_host: a detector) has its
// pass run by forward(), which the pipeline calls on threads of its own, each slot's on
// a compute stream of its own: then one pass's wait is for its own batch only, and the
// GPU runs one pass while another's host work goes on. Concurrent passes of one
// TorchScript module are safe; TileModel's per-pass state (autocast, the executor,
// InferenceMode) is the calling thread's, and on a GPU a batch is one pass.
class CudaModelDevice final : public BatchDevice {
 public:
  CudaModelDevice(TileModel& model, const DeviceChoice& device, const std::optional<RawScaling>& raw)
      : model_(model),
        device_(device),
        blocking_(forward_blocks_host(model.dummy_output())),
        buffers_(pipeline_slots(device), true),
        streams_(static_cast<std::size_t>(buffers_.size())) {
    if (raw) scaler_.emplace(*raw, device.device);
    const auto index = device.device.index();
    for (auto& slot : streams_) {
      slot.copy = cuda_backend::make_copy_stream(index);
      slot.timer = cuda_backend::make_stream_timer(index);
      if (blocking_) slot.compute = cuda_backend::make_compute_stream(index);
    }
  }

  [[nodiscard]] int slots() const override { return buffers_.size(); }
  torch::Tensor host_input(int slot, const BatchShape& shape) override { return buffers_.input(slot, shape); }
  torch::Tensor host_valid(int slot, const BatchShape& shape) override { return buffers_.valid(slot, shape); }

  void submit(int slot, std::int64_t tiles, bool with_valid) override {
    const auto [input, host_valid] = buffers_.rows(slot, tiles, with_valid);
    auto& state = streams_[static_cast<std::size_t>(slot)];
    state.on_device = state.copy->start(input);
    if (host_valid.defined()) state.valid = state.copy->start(host_valid);
    // A blocking pass is forward()'s, on its own thread; the copy is already under way.
    if (!blocking_) run_pass(state);
  }

  [[nodiscard]] bool forward_blocks() const override { return blocking_; }

  void forward(int slot) override {
    check_slot(slot, streams_.size());
    auto& state = streams_[static_cast<std::size_t>(slot)];
    try {
      const auto current = state.compute->make_current();
      run_pass(state);
    } catch (...) {
      // Whatever the pass had not taken yet goes with it.
      state.on_device = torch::Tensor();
      state.valid = torch::Tensor();
      state.error = std::current_exception();
    }
  }

  CollectedBatch collect(int slot) override {
    check_slot(slot, streams_.size());
    auto& state = streams_[static_cast<std::size_t>(slot)];
    if (state.error) std::rethrow_exception(std::exchange(state.error, nullptr));
    const double device_s = state.timer->seconds();  // waits for the end event
    return {std::exchange(state.output, torch::IValue()), device_s};
  }

  MemorySample sample_memory() override { return runtime::sample_memory(device_); }

 private:
  struct SlotStreams {
    std::unique_ptr<cuda_backend::CopyStream> copy;
    std::unique_ptr<cuda_backend::StreamTimer> timer;
    std::unique_ptr<cuda_backend::ComputeStream> compute;  // blocking passes only
    torch::Tensor on_device;                               // the batch as copied, until its pass is queued
    torch::Tensor valid;
    torch::IValue output;      // on the host once the end event has passed
    std::exception_ptr error;  // a blocking pass's failure, for collect()
  };

  // The slot's pass on the calling thread's current stream (the compute stream).
  void run_pass(SlotStreams& state) {
    auto on_device = std::exchange(state.on_device, torch::Tensor());
    auto valid = std::exchange(state.valid, torch::Tensor());
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

  TileModel& model_;
  DeviceChoice device_;
  bool blocking_;
  std::optional<RawScaler> scaler_;  // on the GPU
  HostBuffers buffers_;
  std::vector<SlotStreams> streams_;
};

}  // namespace

int pipeline_slots(const DeviceChoice& device) { return device.is_cuda ? 3 : 2; }

bool forward_blocks_host(const torch::IValue& output) {
  if (output.isTuple()) {
    const auto& items = output.toTupleRef().elements();
    return std::any_of(items.begin(), items.end(), [](const torch::IValue& item) { return forward_blocks_host(item); });
  }
  if (!output.isList()) return false;
  const auto list = output.toList();
  if (list.elementType()->kind() == c10::TypeKind::DictType) return true;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const torch::IValue item = list.get(i);
    if (item.isGenericDict() || forward_blocks_host(item)) return true;
  }
  return false;
}

std::unique_ptr<BatchDevice> make_model_device(TileModel& model, const DeviceChoice& device,
                                               const std::optional<RawScaling>& raw) {
  if (device.is_cuda) return std::make_unique<CudaModelDevice>(model, device, raw);
  return std::make_unique<CpuModelDevice>(model, device, raw);
}

}  // namespace mgpr::runtime
