#include "pipeline/batch_transfer.hpp"

#include <optional>
#include <utility>

#ifdef MGPR_HAVE_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace mgpr::runtime {

struct BatchTransfer::State {
  explicit State(torch::Device on) : device(on) {}
  torch::Device device;
  torch::Tensor in_flight;
#ifdef MGPR_HAVE_TORCH_CUDA
  std::optional<c10::cuda::CUDAStream> copy_stream;
  at::cuda::CUDAEvent copied;  // timing disabled: the cheapest event kind
#endif
};

BatchTransfer::BatchTransfer(const DeviceChoice& device) : state_(std::make_unique<State>(device.device)) {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (device.is_cuda) state_->copy_stream = c10::cuda::getStreamFromPool(false, device.device.index());
#endif
}

BatchTransfer::~BatchTransfer() = default;

void BatchTransfer::start(const torch::Tensor& host_batch) {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (state_->copy_stream) {
    const c10::cuda::CUDAStreamGuard on_copy_stream(*state_->copy_stream);
    // From pinned memory, non_blocking is a DMA queued on the copy stream; LibTorch's
    // host allocator keeps the pinned block from reuse until that copy has finished.
    state_->in_flight = host_batch.to(state_->device, host_batch.scalar_type(), /*non_blocking=*/true);
    state_->copied.record(*state_->copy_stream);
    return;
  }
#endif
  state_->in_flight = host_batch.to(state_->device);
}

torch::Tensor BatchTransfer::take() {
  auto batch = std::exchange(state_->in_flight, torch::Tensor());
#ifdef MGPR_HAVE_TORCH_CUDA
  if (state_->copy_stream) {
    const auto compute = c10::cuda::getCurrentCUDAStream(state_->device.index());
    state_->copied.block(compute);
    // Allocated on the copy stream but used on the compute stream: without this the
    // caching allocator could hand the memory to the next copy while the model reads it.
    batch.record_stream(compute);
  }
#endif
  return batch;
}

}  // namespace mgpr::runtime
