#include "pipeline/batch_transfer.hpp"

#include <utility>

#include "model/cuda_backend.hpp"

namespace mgpr::runtime {

struct BatchTransfer::State {
  explicit State(torch::Device on) : device(on) {}
  torch::Device device;
  torch::Tensor in_flight;
  std::unique_ptr<cuda_backend::CopyStream> copy_stream;  // on a GPU
};

BatchTransfer::BatchTransfer(const DeviceChoice& device) : state_(std::make_unique<State>(device.device)) {
  if (device.is_cuda) state_->copy_stream = cuda_backend::make_copy_stream(device.device.index());
}

BatchTransfer::~BatchTransfer() = default;

void BatchTransfer::start(const torch::Tensor& host_batch) {
  state_->in_flight = state_->copy_stream ? state_->copy_stream->start(host_batch) : host_batch.to(state_->device);
}

torch::Tensor BatchTransfer::take() {
  auto batch = std::exchange(state_->in_flight, torch::Tensor());
  if (state_->copy_stream) state_->copy_stream->hand_over(batch);
  return batch;
}

}  // namespace mgpr::runtime
