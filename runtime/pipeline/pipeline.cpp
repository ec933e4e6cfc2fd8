#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "model/device_memory.hpp"
#include "pipeline/batch_transfer.hpp"
#include "pipeline/compute_timer.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Copies the tiles into one [B, C, H, W] tensor; in page-locked memory when the model is
// on a GPU, so the host-to-device copy can run asynchronously. (Copying on LibTorch's
// threads instead was measured on an H100 and gained nothing: docs/benchmarks.md.)
torch::Tensor stack_tiles(std::span<const TileData> tiles, bool pinned) {
  const auto& first = tiles.front();
  auto options = torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned);
  auto batch =
      torch::empty({static_cast<std::int64_t>(tiles.size()), first.channels, first.height, first.width}, options);
  const std::size_t tile_floats = first.pixels.size();
  auto* destination = batch.data_ptr<float>();
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    std::memcpy(destination + i * tile_floats, tiles[i].pixels.data(), tile_floats * sizeof(float));
  }
  return batch;
}

}  // namespace

std::size_t InFlightTiles::reader_queue() const {
  return static_cast<std::size_t>(std::max(1, batches_read_ahead * batch_size + workers));
}

std::size_t InFlightTiles::held_by_pipeline() const { return 3 * static_cast<std::size_t>(std::max(1, batch_size)); }

InFlightTiles in_flight_tiles(int batch_size, int workers, const DeviceChoice& device) {
  return {batch_size, workers, device.is_cuda ? 2 : 1};
}

PipelineStats run_pipeline(ReaderPool& readers, TileModel& model, const DeviceChoice& device, BatchConsumer& consumer,
                           const PipelineOptions& options) {
  const auto started = Clock::now();
  PipelineStats stats;
  BatchTransfer transfer(device);
  ComputeTimer compute(device);
  double memory_sum = 0;

  // Reads the next batch, stacks it and starts its copy to the device; the tiles stay
  // with the caller until their results are consumed.
  const auto prepare = [&](std::vector<TileData>& tiles) {
    tiles.clear();
    const auto waiting = Clock::now();
    while (tiles.size() < static_cast<std::size_t>(options.batch_size)) {
      auto tile = readers.next();
      if (!tile) break;
      tiles.push_back(std::move(*tile));
    }
    stats.data_wait_s += seconds_since(waiting);
    if (!tiles.empty()) transfer.start(stack_tiles(tiles, device.is_cuda));
  };

  std::vector<TileData> current;
  std::vector<TileData> next;
  current.reserve(static_cast<std::size_t>(options.batch_size));
  next.reserve(static_cast<std::size_t>(options.batch_size));
  prepare(next);
  while (!next.empty()) {
    std::swap(current, next);
    compute.begin();
    // Asynchronous on a GPU: the forward pass is only queued here...
    const auto output = model.forward(transfer.take());
    compute.end();
    // ...so the next batch is read, stacked and copied while the device computes this one.
    prepare(next);
    // Consuming copies the results to the host, which waits for this batch's forward pass.
    consumer.consume(current, output);
    stats.model_s += compute.seconds();

    stats.tiles += static_cast<std::int64_t>(current.size());
    ++stats.batches;
    const auto memory = sample_memory(device);
    memory_sum += static_cast<double>(memory.current_bytes);
    stats.memory_avg_bytes = static_cast<std::int64_t>(memory_sum / static_cast<double>(stats.batches));
    stats.memory_peak_bytes = memory.peak_bytes;
    stats.memory_total_bytes = memory.total_bytes;
    stats.memory_device_peak_bytes = std::max(stats.memory_device_peak_bytes, memory.device_used_bytes);
    for (auto& used : current) readers.recycle(std::move(used));
    current.clear();
    stats.elapsed_s = seconds_since(started);
    if (options.on_batch) options.on_batch(stats);
  }
  stats.read_s = readers.stats().read_s;
  stats.elapsed_s = seconds_since(started);
  return stats;
}

}  // namespace mgpr::runtime
