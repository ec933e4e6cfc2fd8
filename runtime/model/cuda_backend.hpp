#pragma once
// Everything the runtime asks of CUDA, behind one seam chosen by CMake: with a LibTorch
// built for CUDA (the PyTorch wheel's, which brings c10_cuda) cuda_backend_cuda.cpp,
// else cuda_backend_none.cpp, whose functions no run reaches (no device is CUDA there).
// Nothing else in the runtime includes a CUDA header or tests for CUDA with #ifdef.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace mgpr::runtime::cuda_backend {

// What one GPU's memory holds, as the caching allocator and the driver see it.
struct DeviceMemory {
  std::int64_t allocated_bytes = 0;       // tensors now (torch.cuda.memory_allocated)
  std::int64_t allocated_peak_bytes = 0;  // tensors at most
  std::int64_t card_total_bytes = 0;      // the card's memory; 0 when the driver will not say
  std::int64_t card_used_bytes = 0;       // in use on the card, all processes (nvidia-smi's figure)
};

DeviceMemory device_memory(c10::DeviceIndex device_index);
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

}  // namespace mgpr::runtime::cuda_backend
