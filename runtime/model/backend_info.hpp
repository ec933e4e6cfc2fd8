#pragma once
// What the runtime was built with and runs on, for the per-rank banner. Kept apart
// so only one small file includes LibTorch's headers for it.
#include <string>

namespace mgpr::runtime {

struct BackendInfo {
  std::string torch_version;
  std::string gdal_version;  // "none" in a GDAL-less build
  bool cuda_available = false;
  int cuda_devices = 0;
  int threads = 1;
  bool heap_kept = false;  // freed memory stays in the heap (model/host_heap.hpp)
};

// Sets LibTorch's intra-op threads (Debian's build defaults to 1) and the heap's
// policy (model/host_heap.hpp), and reports.
BackendInfo configure_backend(int threads);

}  // namespace mgpr::runtime
