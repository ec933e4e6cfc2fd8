#pragma once
// The rank's main loop, by stage: reader threads read tiles ahead (source/reader_pool)
// and each copies the tile it read straight into the next free row of a batch slot's
// host input (pipeline/batch_slots.hpp), so that copy runs on every reader at once; this
// thread submits each slot to the device (pipeline/batch_device.hpp) once its rows are
// filled; a post-processing thread collects each slot's output in submission order and
// hands it to the consumer (the task: parsing, journal, results), then frees the slot.
// On a GPU two batches are queued on the device while the third is filled, so the device
// never waits for the host between batches. A device whose forward pass holds the host (a
// detector on a GPU: BatchDevice::forward_blocks) has its passes run on two threads of
// their own, so it too holds two batches while the third is filled.
#include <torch/script.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "model/model.hpp"
#include "pipeline/batch_device.hpp"
#include "source/reader_pool.hpp"

namespace mgpr::runtime {

// A batch's host input as the device received it, for a consumer that reads its tiles'
// pixels again (crops for a second model): `samples`, [tiles, C, H, W], float32 values or
// raw samples; `valid`, [tiles, H, W] uint8 with 0 where a raw tile's pixel is missing,
// when any is (undefined otherwise: float32 values hold a missing pixel as 0 already).
struct BatchInput {
  torch::Tensor samples;
  torch::Tensor valid = {};
};

// Receives each batch's tiles with the model's output for them, on the host, on the
// pipeline's post-processing thread, in the order the batches were submitted. The tiles'
// pixels are gone by then (copied into the batch); their ids and masks remain.
class BatchConsumer {
 public:
  virtual ~BatchConsumer() = default;
  virtual void consume(std::span<const TileData> tiles, const torch::IValue& output) = 0;
  // The same with the batch's host input, unchanged until this returns, for a consumer
  // that reads the tiles' pixels again; the default leaves it.
  virtual void consume_with_inputs(std::span<const TileData> tiles, const torch::IValue& output,
                                   const BatchInput& /*input*/) {
    consume(tiles, output);
  }
  // A raster's read failed on this rank (its other tiles here are skipped): told once
  // per raster, on a reader thread, as it happens.
  virtual void raster_failed(int /*image*/, const std::string& /*reason*/) {}
};

struct PipelineStats {
  std::int64_t tiles = 0;
  std::int64_t batches = 0;
  double elapsed_s = 0;
  // The device's busy time for the forward passes: on a GPU its own time between events
  // around each batch's work, on CPU the wall time of each forward pass.
  double model_s = 0;
  // Waiting for the readers; on a GPU mostly while it still computes earlier batches.
  double data_wait_s = 0;
  double stack_s = 0;  // copying tiles into the batches' host inputs, summed over the readers
  double read_s = 0;   // the readers' own time, summed over threads
  // Memory is sampled at most once a second (the first batch, then a second apart, and
  // at the end): the average is over those samples.
  std::int64_t memory_avg_bytes = 0;
  std::int64_t memory_peak_bytes = 0;
  std::int64_t memory_total_bytes = 0;
  std::int64_t memory_device_peak_bytes = 0;  // the card's use as nvidia-smi sees it; 0 on CPU
};

struct PipelineOptions {
  int batch_size = 4;
  // Called after every batch with the running figures: progress lines, the watchdog. On
  // the post-processing thread, as consume() is.
  std::function<void(const PipelineStats&)> on_batch;
  // The source's TileSource::raw_scaling(): set when tiles come raw, to be scaled on the
  // model's device (run_pipeline).
  std::optional<RawScaling> raw_scaling;
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
  int slots = 2;  // the batch slots (pipeline_slots in pipeline/model_device.hpp)

  // What the reader pool may hold, ready or being read.
  [[nodiscard]] std::size_t reader_queue() const;
  // The tiles whose pixels are held at once: the batch slots' host inputs, and each
  // reader's buffer (a tile in the queue has already left its pixels in a slot).
  [[nodiscard]] std::size_t held_by_pipeline() const;
  [[nodiscard]] std::size_t total() const { return held_by_pipeline(); }
};

InFlightTiles in_flight_tiles(int batch_size, int workers, const DeviceChoice& device);

// How the pipeline reads its tiles (source/reader_pool.hpp): `workers` threads reading
// the tiles `feed` hands out from `source`, at most `queue` of them claimed from the feed
// and not yet taken into a batch (InFlightTiles::reader_queue()).
struct TileReading {
  const TileSource& source;
  int workers = 1;
  TileFeed feed;
  std::size_t queue = 1;
};

struct PipelineRun {
  PipelineStats stats;
  RasterFailures failures;  // rasters whose reads failed; their other tiles were skipped
};

// Reads every tile the feed gives and runs it through `device` to `consumer`. When a
// stage fails (a read, the model, the consumer) no more batches are submitted and the
// first error is rethrown; batches the device finished before a read or a forward pass
// failed are still consumed (journaled) first, so nothing computed is lost.
PipelineRun run_batches(const TileReading& reading, BatchDevice& device, BatchConsumer& consumer,
                        const PipelineOptions& options);

// run_batches on `model`'s device (pipeline/model_device.hpp).
PipelineRun run_pipeline(const TileReading& reading, TileModel& model, const DeviceChoice& device,
                         BatchConsumer& consumer, const PipelineOptions& options);

}  // namespace mgpr::runtime
