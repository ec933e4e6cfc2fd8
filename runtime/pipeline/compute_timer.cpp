#include "pipeline/compute_timer.hpp"

#include <chrono>

#ifdef MGPR_HAVE_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace mgpr::runtime {

struct ComputeTimer::State {
  explicit State(torch::Device on) : device(on) {}
  torch::Device device;
  std::chrono::steady_clock::time_point began;
  std::chrono::steady_clock::time_point ended;
#ifdef MGPR_HAVE_TORCH_CUDA
  at::cuda::CUDAEvent began_on_device{cudaEventDefault};
  at::cuda::CUDAEvent ended_on_device{cudaEventDefault};
#endif
};

ComputeTimer::ComputeTimer(const DeviceChoice& device) : state_(std::make_unique<State>(device.device)) {}

ComputeTimer::~ComputeTimer() = default;

void ComputeTimer::begin() {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (state_->device.is_cuda()) {
    state_->began_on_device.record(c10::cuda::getCurrentCUDAStream(state_->device.index()));
    return;
  }
#endif
  state_->began = std::chrono::steady_clock::now();
}

void ComputeTimer::end() {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (state_->device.is_cuda()) {
    state_->ended_on_device.record(c10::cuda::getCurrentCUDAStream(state_->device.index()));
    return;
  }
#endif
  state_->ended = std::chrono::steady_clock::now();
}

double ComputeTimer::seconds() {
#ifdef MGPR_HAVE_TORCH_CUDA
  if (state_->device.is_cuda()) {
    state_->ended_on_device.synchronize();
    return static_cast<double>(state_->began_on_device.elapsed_time(state_->ended_on_device)) / 1000.0;
  }
#endif
  return std::chrono::duration<double>(state_->ended - state_->began).count();
}

}  // namespace mgpr::runtime
