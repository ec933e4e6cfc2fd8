#pragma once
// Everything the runtime asks of CUDA, behind one seam chosen by CMake: with a LibTorch
// built for CUDA (the PyTorch wheel's, which brings c10_cuda) cuda_backend_cuda.cpp,
// else cuda_backend_none.cpp, whose functions no run reaches (no device is CUDA there).
// Nothing else in the runtime includes a CUDA header or tests for CUDA with #ifdef.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace mgpr::runtime::cuda_backend {

// The caching allocator's figures for one GPU.
struct AllocatorBytes {
  std::int64_t allocated = 0;       // tensors now (torch.cuda.memory_allocated)
  std::int64_t allocated_peak = 0;  // tensors at most
};

// The driver's figures for a whole card, all processes and contexts included.
struct CardBytes {
  std::int64_t free = 0;
  std::int64_t total = 0;
};

// Makes a device the calling thread's current one while it lives (MemoryQueries).
class CurrentDeviceScope {
 public:
  virtual ~CurrentDeviceScope() = default;
};

// What a memory sample asks of CUDA, one question at a time, so that the device each is
// asked on is decided once, by model/device_memory.cpp, and tested there without a GPU.
class MemoryQueries {
 public:
  virtual ~MemoryQueries() = default;
  // Makes `device_index` current on the calling thread until the scope ends, then gives
  // the thread its own back without opening a context on it (c10's CUDAGuard).
  [[nodiscard]] virtual std::unique_ptr<CurrentDeviceScope> make_current(c10::DeviceIndex device_index) = 0;
  virtual AllocatorBytes allocator_bytes(c10::DeviceIndex device_index) = 0;
  // The calling thread's current device's card (cudaMemGetInfo takes no device);
  // nullopt when the driver will not say.
  virtual std::optional<CardBytes> current_card_bytes() = 0;
};
MemoryQueries& memory_queries();
// The GPU's marketing name ("NVIDIA H200").
std::string product_name(c10::DeviceIndex device_index);
// major * 10 + minor (90 for an H100/H200).
int compute_capability(c10::DeviceIndex device_index);
// The GPU's UUID as nvidia-smi -L prints it ("GPU-8f2c1d3e-…"): the same card whatever
// CUDA_VISIBLE_DEVICES calls it, so two ranks on one GPU can be told apart from two GPUs.
std::string device_uuid(c10::DeviceIndex device_index);

// Two events on the device's current (compute) stream: the device's own time between them.
class StreamTimer {
 public:
  virtual ~StreamTimer() = default;
  virtual void record_begin() = 0;
  virtual void record_end() = 0;
  // Waits for the end event, then returns the seconds between the two.
  virtual double seconds() = 0;
};
std::unique_ptr<StreamTimer> make_stream_timer(c10::DeviceIndex device_index);

// A stream of its own for host-to-device copies, so the next batch crosses PCIe while
// the compute stream still runs the model on the last one.
class CopyStream {
 public:
  virtual ~CopyStream() = default;
  // Queues the copy of `host_batch` to the device on the copy stream and returns the
  // device tensor at once (asynchronous only from page-locked memory).
  virtual torch::Tensor start(const torch::Tensor& host_batch) = 0;
  // Makes the compute stream wait for that copy, and keeps the caching allocator from
  // reusing `batch`'s memory until the compute stream is done with it.
  virtual void hand_over(torch::Tensor& batch) = 0;
};
std::unique_ptr<CopyStream> make_copy_stream(c10::DeviceIndex device_index);

// A compute stream of its own, for a forward pass that runs beside others, each on a
// thread of its own (a detector's: pipeline/model_device.cpp): what the pass waits for
// (its scores, to filter its boxes) is its own work, not another batch's queued ahead of
// it on a shared stream.
class ComputeStream {
 public:
  // While it lives, the stream and its device are the calling thread's current ones.
  class Current {
   public:
    virtual ~Current() = default;
  };
  virtual ~ComputeStream() = default;
  [[nodiscard]] virtual std::unique_ptr<Current> make_current() = 0;
};
std::unique_ptr<ComputeStream> make_compute_stream(c10::DeviceIndex device_index);

}  // namespace mgpr::runtime::cuda_backend
