#include "model/device_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "model/cuda_backend.hpp"

namespace mgpr::runtime {

MemorySample sample_memory(const DeviceChoice& device) {
  MemorySample sample;
  if (device.is_cuda) {
    const auto memory = cuda_backend::device_memory(device.device.index());
    sample.current_bytes = memory.allocated_bytes;
    sample.peak_bytes = memory.allocated_peak_bytes;
    sample.total_bytes = memory.card_total_bytes;
    sample.device_used_bytes = memory.card_used_bytes;
    return sample;
  }
  long pages_total = 0;
  long pages_resident = 0;
  std::ifstream statm("/proc/self/statm");
  if (statm >> pages_total >> pages_resident) sample.current_bytes = pages_resident * ::sysconf(_SC_PAGESIZE);
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) sample.peak_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
  return sample;
}

std::string device_product_name(const DeviceChoice& device) {
  return device.is_cuda ? cuda_backend::product_name(device.device.index()) : std::string();
}

int compute_capability(const DeviceChoice& device) {
  return device.is_cuda ? cuda_backend::compute_capability(device.device.index()) : 0;
}

}  // namespace mgpr::runtime
