#pragma once
// What the pipeline asks of the device that runs the model, so that one scheduler
// (pipeline/pipeline.hpp) drives a CPU, a GPU and the simulated asynchronous device of
// the tests and benchmarks (pipeline/simulated_device.hpp) alike.
//
// The pipeline owns a few batch slots. For each batch it writes the tiles into the
// slot's host input, submits the slot, and later collects its output, in submission
// order. A device may run submitted slots asynchronously (a GPU queues the copy, the
// model and the copy back, and returns): the host input of a submitted slot is not
// written again, and its output not read, until collect(slot) has returned.
#include <torch/script.h>

#include <cstdint>

#include "model/device_memory.hpp"

namespace mgpr::runtime {

// The shape of every batch's host input: [batch, channels, height, width], float32 or,
// for raw tiles, their raw_dtype (scaled on the device: pipeline/raw_scaler.hpp).
struct BatchShape {
  std::int64_t batch = 0;
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  torch::ScalarType dtype = torch::kFloat;

  [[nodiscard]] std::int64_t tile_elements() const { return channels * height * width; }
  friend bool operator==(const BatchShape&, const BatchShape&) = default;
};

// One collected batch: the model's output, on the host, and how long the device was busy
// with the batch (its own time between events on a GPU; the forward pass's wall time on
// a CPU).
struct CollectedBatch {
  torch::IValue output;
  double device_s = 0;
};

class BatchDevice {
 public:
  virtual ~BatchDevice() = default;

  // How many slots the pipeline keeps: the batches submitted and not yet collected, plus
  // the one being filled. A device that computes while the host fills the next batch
  // wants at least three (two queued on the device, one filling); a CPU, where the host
  // itself computes, two (one computed, one whose output is being consumed).
  [[nodiscard]] virtual int slots() const = 0;

  // The slot's host input, allocated at the first call (page-locked on a GPU, so the copy
  // is asynchronous) and the same tensor afterwards. `slot` < slots().
  virtual torch::Tensor host_input(int slot, const BatchShape& shape) = 0;
  // For raw tiles: the slot's valid masks, [batch, height, width] uint8 (1 valid, 0
  // missing or outside the raster), allocated and kept as host_input is.
  virtual torch::Tensor host_valid(int slot, const BatchShape& shape) = 0;

  // Starts the slot's batch: the first `tiles` rows of its host input (and, with
  // `with_valid`, of its valid masks) to the device, raw tiles scaled there, the model on
  // them, and the output back to the host. May return before any of it is done. Throws
  // when the device or the model fails while it is started.
  virtual void submit(int slot, std::int64_t tiles, bool with_valid) = 0;

  // Whether the model's forward pass holds the calling thread until the device is done
  // with the batch: a detector's does (torchvision's filters each tile's boxes by score,
  // which waits for the scores). Such a device's submit() queues only what does not wait
  // (the copy to the device), and the pipeline runs forward(slot) on a thread of its own,
  // so the thread that fills and submits slots keeps two or more batches in flight.
  [[nodiscard]] virtual bool forward_blocks() const { return false; }
  // For a device whose forward_blocks(): the slot's forward pass and the copy of its
  // output back, after submit(slot) and before collect(slot). Passes of different slots
  // may run at once, on different threads. Does not throw: a failed pass is collect()'s
  // to throw, as a batch that failed on the device is.
  virtual void forward(int /*slot*/) {}

  // Waits for the slot's output and returns it; slots are collected in the order they
  // were submitted. After it returns the slot's host input may be written again.
  // Throws when the batch failed on the device.
  virtual CollectedBatch collect(int slot) = 0;

  // What the device's memory holds now (model/device_memory.hpp); the pipeline samples
  // it at most once a second, since on a GPU the driver's figure is a synchronous call.
  virtual MemorySample sample_memory() = 0;
};

}  // namespace mgpr::runtime
