#include "model/device_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#ifdef MGPR_HAVE_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace mgpr::runtime {

MemorySample sample_memory(const DeviceChoice& device) {
  MemorySample sample;
#ifdef MGPR_HAVE_TORCH_CUDA
  if (device.is_cuda) {
    const auto index = device.device.index();
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    const auto& allocated = stats.allocated_bytes[0];  // aggregate over pool kinds
    sample.current_bytes = allocated.current;
    sample.peak_bytes = allocated.peak;
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      sample.total_bytes = static_cast<std::int64_t>(total_bytes);
      sample.device_used_bytes = static_cast<std::int64_t>(total_bytes - free_bytes);
    }
    return sample;
  }
#else
  (void)device;
#endif
  long pages_total = 0;
  long pages_resident = 0;
  std::ifstream statm("/proc/self/statm");
  if (statm >> pages_total >> pages_resident) sample.current_bytes = pages_resident * ::sysconf(_SC_PAGESIZE);
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) sample.peak_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
  return sample;
}

std::string device_product_name(const DeviceChoice& device) {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (device.is_cuda) return at::cuda::getDeviceProperties(device.device.index())->name;
#else
  (void)device;
#endif
  return {};
}

int compute_capability(const DeviceChoice& device) {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (device.is_cuda) {
    const auto* properties = at::cuda::getDeviceProperties(device.device.index());
    return properties->major * 10 + properties->minor;
  }
#else
  (void)device;
#endif
  return 0;
}

}  // namespace mgpr::runtime
