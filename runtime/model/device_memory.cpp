#include "model/device_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "model/cuda_backend.hpp"

namespace mgpr::runtime {

MemorySample sample_gpu_memory(cuda_backend::MemoryQueries& queries, c10::DeviceIndex device_index) {
  MemorySample sample;
  const auto allocator = queries.allocator_bytes(device_index);
  sample.current_bytes = allocator.allocated;
  sample.peak_bytes = allocator.allocated_peak;
  std::optional<cuda_backend::CardBytes> card;
  {
    // Without it a rank on device 3 would report device 0's card, and open a context
    // there that takes memory from whichever rank runs on device 0.
    const auto on_device = queries.make_current(device_index);
    card = queries.current_card_bytes();
  }
  if (card) {
    sample.total_bytes = card->total;
    sample.device_used_bytes = card->total - card->free;
  }
  return sample;
}

MemorySample sample_memory(const DeviceChoice& device) {
  if (device.is_cuda) return sample_gpu_memory(cuda_backend::memory_queries(), device.device.index());
  MemorySample sample;
  long pages_total = 0;
  long pages_resident = 0;
  std::ifstream statm("/proc/self/statm");
  if (statm >> pages_total >> pages_resident) sample.current_bytes = pages_resident * ::sysconf(_SC_PAGESIZE);
  sample.peak_bytes = process_peak_resident_bytes();
  return sample;
}

std::int64_t process_peak_resident_bytes() {
  rusage usage{};
  return ::getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<std::int64_t>(usage.ru_maxrss) * 1024 : 0;
}

std::string device_product_name(const DeviceChoice& device) {
  return device.is_cuda ? cuda_backend::product_name(device.device.index()) : std::string();
}

int compute_capability(const DeviceChoice& device) {
  return device.is_cuda ? cuda_backend::compute_capability(device.device.index()) : 0;
}

}  // namespace mgpr::runtime
