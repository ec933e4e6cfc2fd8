#pragma once
// The rank's main loop: tiles from the reader pool are stacked into batches and run
// through the model while the readers already fetch the next ones; on a GPU the next
// batch is also stacked and copied to the device while the current one computes.
#include <torch/script.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "model/model.hpp"
#include "source/reader_pool.hpp"

namespace mgpr::runtime {

// Receives each batch's tiles with the model's output for them (on the model's device).
class BatchConsumer {
 public:
  virtual ~BatchConsumer() = default;
  virtual void consume(std::span<const TileData> tiles, const torch::IValue& output) = 0;
};

struct PipelineStats {
  std::int64_t tiles = 0;
  std::int64_t batches = 0;
  double elapsed_s = 0;
  // The device's busy time for the forward passes: on a GPU its own time between events
  // around each batch's work, on CPU the wall time of each forward pass.
  double model_s = 0;
  // Waiting for the readers; on a GPU partly while it still computes the previous batch.
  double data_wait_s = 0;
  double read_s = 0;  // the readers' own time, summed over threads
  std::int64_t memory_avg_bytes = 0;
  std::int64_t memory_peak_bytes = 0;
  std::int64_t memory_total_bytes = 0;
  std::int64_t memory_device_peak_bytes = 0;  // the card's use as nvidia-smi sees it; 0 on CPU
};

struct PipelineOptions {
  int batch_size = 4;
  // Called after every batch with the running figures: progress lines, the watchdog.
  std::function<void(const PipelineStats&)> on_batch;
};

// The tiles a rank holds in host memory at once, counted once for the reader pool's
// queue and for the memory budget (pipeline/memory_budget.hpp).
struct InFlightTiles {
  int batch_size = 4;
  int workers = 2;
  // On a CPU the next batch is taken only after the forward pass, so one batch (plus a
  // tile per worker in flight) ahead is all the model can use; every tile more is claimed
  // from the shared dynamic feed early and can leave another rank idle at the end. A GPU
  // takes the next batch while the current one computes, and its batches are short
  // against a read's jitter, so it reads two batches ahead.
  int batches_read_ahead = 1;

  // What the reader pool may hold, ready or being read.
  [[nodiscard]] std::size_t reader_queue() const;
  // Besides the queue, run_pipeline holds the batch in the model, the next one being
  // filled and one of them stacked into a single tensor.
  [[nodiscard]] std::size_t held_by_pipeline() const;
  [[nodiscard]] std::size_t total() const { return reader_queue() + held_by_pipeline(); }
};

InFlightTiles in_flight_tiles(int batch_size, int workers, const DeviceChoice& device);

PipelineStats run_pipeline(ReaderPool& readers, TileModel& model, const DeviceChoice& device, BatchConsumer& consumer,
                           const PipelineOptions& options);

}  // namespace mgpr::runtime
