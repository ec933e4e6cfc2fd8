#include "pipeline/compute_timer.hpp"

#include <chrono>

#include "model/cuda_backend.hpp"

namespace mgpr::runtime {

struct ComputeTimer::State {
  std::unique_ptr<cuda_backend::StreamTimer> on_device;  // on a GPU; else wall time
  std::chrono::steady_clock::time_point began;
  std::chrono::steady_clock::time_point ended;
};

ComputeTimer::ComputeTimer(const DeviceChoice& device) : state_(std::make_unique<State>()) {
  if (device.is_cuda) state_->on_device = cuda_backend::make_stream_timer(device.device.index());
}

ComputeTimer::~ComputeTimer() = default;

void ComputeTimer::begin() {
  if (state_->on_device) {
    state_->on_device->record_begin();
  } else {
    state_->began = std::chrono::steady_clock::now();
  }
}

void ComputeTimer::end() {
  if (state_->on_device) {
    state_->on_device->record_end();
  } else {
    state_->ended = std::chrono::steady_clock::now();
  }
}

double ComputeTimer::seconds() {
  if (state_->on_device) return state_->on_device->seconds();
  return std::chrono::duration<double>(state_->ended - state_->began).count();
}

}  // namespace mgpr::runtime
