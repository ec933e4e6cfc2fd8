#pragma once
// How long each batch kept the device busy: the "busy %" of the GPU Usage Summary.
#include <memory>

#include "model/model.hpp"

namespace mgpr::runtime {

// The time a batch's forward pass kept the device busy. On a GPU: the device's own time
// between two events on the compute stream, so a GPU left waiting for data between
// batches is not counted busy, and launching work asynchronously does not hide it. On
// CPU: the wall time of the (synchronous) forward pass.
class ComputeTimer {
 public:
  explicit ComputeTimer(const DeviceChoice& device);
  ~ComputeTimer();
  ComputeTimer(const ComputeTimer&) = delete;
  ComputeTimer& operator=(const ComputeTimer&) = delete;

  void begin();  // before the batch's work is launched
  void end();    // after it is launched
  // Waits for end's point on the device, then returns the seconds between begin and end.
  double seconds();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mgpr::runtime
