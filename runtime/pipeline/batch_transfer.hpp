#pragma once
// Moves stacked batches to the model's device. On a GPU the copy runs on a stream of its
// own, so batch k+1 crosses PCIe while the model still computes batch k on the compute
// stream; on CPU there is nothing to move.
#include <torch/types.h>

#include <memory>

#include "model/model.hpp"

namespace mgpr::runtime {

class BatchTransfer {
 public:
  explicit BatchTransfer(const DeviceChoice& device);
  ~BatchTransfer();
  BatchTransfer(const BatchTransfer&) = delete;
  BatchTransfer& operator=(const BatchTransfer&) = delete;

  // Starts copying `host_batch` to the device and returns at once. The copy is
  // asynchronous only from page-locked memory (stack batches with pinned_memory on CUDA).
  void start(const torch::Tensor& host_batch);
  // The batch started last, for use on the compute stream: the compute stream (not the
  // host) waits for its copy. One take() per start().
  torch::Tensor take();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mgpr::runtime
