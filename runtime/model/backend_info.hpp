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
};

// Sets LibTorch's intra-op threads (Debian's build defaults to 1) and reports.
BackendInfo configure_backend(int threads);

}  // namespace mgpr::runtime
