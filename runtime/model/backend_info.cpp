#include "model/backend_info.hpp"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "model/host_heap.hpp"

#ifdef MGPR_HAVE_GDAL
#include <gdal.h>
#endif

namespace mgpr::runtime {

BackendInfo configure_backend(int threads) {
  BackendInfo info;
  info.torch_version = TORCH_VERSION;
  info.heap_kept = keep_freed_memory_in_heap();
  at::set_num_threads(threads);
  info.threads = at::get_num_threads();
  info.cuda_available = torch::cuda::is_available();
  info.cuda_devices = info.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
#ifdef MGPR_HAVE_GDAL
  info.gdal_version = GDALVersionInfo("RELEASE_NAME");
#else
  info.gdal_version = "none";
#endif
  return info;
}

}  // namespace mgpr::runtime
