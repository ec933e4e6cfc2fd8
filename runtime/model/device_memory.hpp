#pragma once
// What a rank reads off its device: the memory it uses (from the CUDA caching allocator
// on a GPU, the process's resident set on CPU), the GPU's name and compute capability.
// CUDA itself is behind model/cuda_backend.hpp; the device a query runs on is set here.
#include <cstdint>
#include <string>

#include "model/model.hpp"

namespace mgpr::runtime {

struct MemorySample {
  // The tensors' bytes (the caching allocator's "allocated" on a GPU, as multigpu_raster
  // and torch.cuda.memory_allocated report them; the resident set on CPU).
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t total_bytes = 0;  // the GPU's memory; 0 on CPU
  // What the card has in use, all processes and the CUDA context included: the figure
  // nvidia-smi shows (allocated plus the allocator's cache plus the context); 0 on CPU.
  std::int64_t device_used_bytes = 0;
};

MemorySample sample_memory(const DeviceChoice& device);

// The process's peak resident set so far (getrusage's ru_maxrss), in bytes.
std::int64_t process_peak_resident_bytes();

namespace cuda_backend {
class MemoryQueries;
}
// A GPU's sample, from `queries` (cuda_backend::memory_queries() in a run). The driver
// answers for the calling thread's current device, and the thread that samples (the
// pipeline's post-processing one) never chose one: the query runs with `device_index`
// made current, and the thread's own current device is given back afterwards.
MemorySample sample_gpu_memory(cuda_backend::MemoryQueries& queries, c10::DeviceIndex device_index);
// The GPU's marketing name ("NVIDIA H200"); empty on CPU.
std::string device_product_name(const DeviceChoice& device);
// The GPU's compute capability as major * 10 + minor (90 for an H100/H200); 0 on CPU.
int compute_capability(const DeviceChoice& device);

}  // namespace mgpr::runtime
