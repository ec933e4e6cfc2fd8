#include "pipeline.hpp"

#include <chrono>
#include <cstring>
#include <vector>

#include "device_memory.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Copies the tiles into one [B, C, H, W] tensor; in page-locked memory when the model is
// on a GPU, so the host-to-device copy can run asynchronously.
torch::Tensor stack_tiles(std::span<const TileData> tiles, bool pinned) {
  const auto& first = tiles.front();
  auto options = torch::TensorOptions().dtype(torch::kFloat).pinned_memory(pinned);
  auto batch = torch::empty({static_cast<std::int64_t>(tiles.size()), first.channels, first.height, first.width},
                            options);
  const std::size_t tile_floats = first.pixels.size();
  auto* destination = batch.data_ptr<float>();
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    std::memcpy(destination + i * tile_floats, tiles[i].pixels.data(), tile_floats * sizeof(float));
  }
  return batch;
}

}  // namespace

PipelineStats run_pipeline(ReaderPool& readers, TileModel& model, const DeviceChoice& device,
                           BatchConsumer& consumer, const PipelineOptions& options) {
  const auto started = Clock::now();
  PipelineStats stats;
  std::vector<TileData> batch;
  batch.reserve(static_cast<std::size_t>(options.batch_size));
  double memory_sum = 0;
  bool finished = false;
  while (!finished) {
    batch.clear();
    const auto waiting = Clock::now();
    while (batch.size() < static_cast<std::size_t>(options.batch_size)) {
      auto tile = readers.next();
      if (!tile) {
        finished = true;
        break;
      }
      batch.push_back(std::move(*tile));
    }
    stats.data_wait_s += seconds_since(waiting);
    if (batch.empty()) break;

    const auto computing = Clock::now();
    const auto output = model.forward(stack_tiles(batch, device.is_cuda));
    synchronize(device);
    stats.model_s += seconds_since(computing);

    consumer.consume(batch, output);
    stats.tiles += static_cast<std::int64_t>(batch.size());
    ++stats.batches;
    const auto memory = sample_memory(device);
    memory_sum += static_cast<double>(memory.current_bytes);
    stats.memory_avg_bytes = static_cast<std::int64_t>(memory_sum / static_cast<double>(stats.batches));
    stats.memory_peak_bytes = memory.peak_bytes;
    stats.memory_total_bytes = memory.total_bytes;
    for (auto& used : batch) readers.recycle(std::move(used));
    stats.elapsed_s = seconds_since(started);
    if (options.on_batch) options.on_batch(stats);
  }
  stats.read_s = readers.stats().read_s;
  stats.elapsed_s = seconds_since(started);
  return stats;
}

}  // namespace mgpr::runtime
