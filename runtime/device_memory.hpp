#pragma once
// Memory a rank uses on its device: from the CUDA caching allocator on a GPU, the
// process's resident set on CPU.
#include <cstdint>
#include <string>

#include "model.hpp"

namespace mgpr::runtime {

struct MemorySample {
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t total_bytes = 0;  // the GPU's memory; 0 on CPU
};

MemorySample sample_memory(const DeviceChoice& device);
// The GPU's marketing name ("NVIDIA H200"); empty on CPU.
std::string device_product_name(const DeviceChoice& device);
// Waits for the device's queued work, so timings measure the work and not its launch.
void synchronize(const DeviceChoice& device);

}  // namespace mgpr::runtime
