// The CUDA seam of a LibTorch without CUDA (Debian's): no device is ever CUDA in such a
// build (choose_device refuses one), so these are never reached; each says why if it is.
#include <stdexcept>

#include "model/cuda_backend.hpp"

namespace mgpr::runtime::cuda_backend {
namespace {

[[noreturn]] void no_cuda() {
  throw std::logic_error("mgpr was built against a LibTorch without CUDA; rebuild against a CUDA one");
}

}  // namespace

MemoryQueries& memory_queries() { no_cuda(); }
std::string product_name(c10::DeviceIndex /*device_index*/) { no_cuda(); }
int compute_capability(c10::DeviceIndex /*device_index*/) { no_cuda(); }
std::string device_uuid(c10::DeviceIndex /*device_index*/) { no_cuda(); }
std::unique_ptr<StreamTimer> make_stream_timer(c10::DeviceIndex /*device_index*/) { no_cuda(); }
std::unique_ptr<CopyStream> make_copy_stream(c10::DeviceIndex /*device_index*/) { no_cuda(); }
std::unique_ptr<ComputeStream> make_compute_stream(c10::DeviceIndex /*device_index*/) { no_cuda(); }

}  // namespace mgpr::runtime::cuda_backend
