#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeline/model_device.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What the filling thread and the post-processing thread share: the free slots, the
// submitted ones in order, the running figures and the first error.
class SlotQueues {
 public:
  explicit SlotQueues(int slots) {
    for (int slot = 0; slot < slots; ++slot) free_.push_back(slot);
  }

  // A free slot, or none once a stage failed.
  std::optional<int> take_free() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return failed() || !free_.empty(); });
    if (failed()) return std::nullopt;
    const int slot = free_.front();
    free_.pop_front();
    return slot;
  }
  void give_back(int slot) {
    {
      const std::lock_guard lock(mutex_);
      free_.push_back(slot);
    }
    changed_.notify_all();
  }

  void submitted(int slot) {
    {
      const std::lock_guard lock(mutex_);
      submitted_.push_back(slot);
    }
    changed_.notify_all();
  }
  // No more slots will be submitted.
  void close() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }
  // The oldest submitted slot, or none once closed and drained.
  std::optional<int> next_submitted() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return closed_ || !submitted_.empty(); });
    if (submitted_.empty()) return std::nullopt;
    const int slot = submitted_.front();
    submitted_.pop_front();
    return slot;
  }

  // Keeps the first error; the filling thread stops at its next slot.
  void fail(std::exception_ptr error) {
    {
      const std::lock_guard lock(mutex_);
      if (!error_) error_ = std::move(error);
    }
    changed_.notify_all();
  }
  [[nodiscard]] bool has_failed() const {
    const std::lock_guard lock(mutex_);
    return failed();
  }
  [[nodiscard]] std::exception_ptr error() const {
    const std::lock_guard lock(mutex_);
    return error_;
  }

  // The running figures, changed under the lock by either thread.
  template <typename Change>
  PipelineStats update(Change change) {
    const std::lock_guard lock(mutex_);
    change(stats_);
    return stats_;
  }

 private:
  [[nodiscard]] bool failed() const { return error_ != nullptr; }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<int> free_;
  std::deque<int> submitted_;
  bool closed_ = false;
  std::exception_ptr error_;
  PipelineStats stats_;
};

// The device's memory, sampled at most once a second: on a GPU the driver's figure is a
// synchronous call, which every batch could not afford.
class MemorySampler {
 public:
  explicit MemorySampler(BatchDevice& device) : device_(device) {}

  void sample_if_due(PipelineStats& stats, bool force) {
    const auto now = Clock::now();
    if (!force && samples_ > 0 && now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    const auto memory = device_.sample_memory();
    ++samples_;
    sum_ += static_cast<double>(memory.current_bytes);
    stats.memory_avg_bytes = static_cast<std::int64_t>(sum_ / static_cast<double>(samples_));
    stats.memory_peak_bytes = std::max(stats.memory_peak_bytes, memory.peak_bytes);
    stats.memory_total_bytes = memory.total_bytes;
    stats.memory_device_peak_bytes = std::max(stats.memory_device_peak_bytes, memory.device_used_bytes);
  }

 private:
  BatchDevice& device_;
  Clock::time_point last_{};
  std::int64_t samples_ = 0;
  double sum_ = 0;
};

// The post-processing stage: collects each submitted slot's output, in order, hands it
// to the consumer and frees the slot. When the filling stage fails, what it submitted
// before is still consumed: those results are computed. When this stage fails (the
// device, the consumer) it still collects what is in flight, since the device must be
// done with a slot before it is freed, but consumes nothing more.
void post_process(BatchDevice& device, std::vector<std::vector<TileData>>& slot_tiles, SlotQueues& queues,
                  BatchConsumer& consumer, const PipelineOptions& options, Clock::time_point started) {
  MemorySampler memory(device);
  bool consuming = true;
  while (const auto slot = queues.next_submitted()) {
    auto& tiles = slot_tiles[static_cast<std::size_t>(*slot)];
    try {
      auto batch = device.collect(*slot);
      if (consuming) {
        consumer.consume(tiles, batch.output);
        const auto running = queues.update([&](PipelineStats& stats) {
          stats.tiles += static_cast<std::int64_t>(tiles.size());
          ++stats.batches;
          stats.model_s += batch.device_s;
          memory.sample_if_due(stats, false);
          stats.elapsed_s = seconds_since(started);
        });
        if (options.on_batch) options.on_batch(running);
      }
    } catch (...) {
      consuming = false;
      queues.fail(std::current_exception());
    }
    tiles.clear();
    queues.give_back(*slot);
  }
  queues.update([&](PipelineStats& stats) { memory.sample_if_due(stats, true); });
}

BatchShape shape_of(const TileData& tile, int batch_size) {
  return {batch_size, tile.channels, tile.height, tile.width, tile.bytes.empty() ? torch::kFloat : torch::kByte};
}

// One batch slot being filled: its host input, and for raw tiles its valid masks.
struct SlotFill {
  torch::Tensor input;
  torch::Tensor valid;
  bool any_invalid = false;  // some tile has a pixel to clear: the masks travel
};

// Copies `tile`'s samples into row `row` of the slot's host input (a raw tile's valid
// mask too) and hands its buffers straight back to the readers: from here the slot
// holds the pixels.
void copy_into_slot(TileData& tile, SlotFill& fill, const BatchShape& shape, std::int64_t row, ReaderPool& readers) {
  const bool raw = shape.dtype == torch::kByte;
  const auto samples = static_cast<std::int64_t>(raw ? tile.bytes.size() : tile.pixels.size());
  if (shape_of(tile, static_cast<int>(shape.batch)) != shape || samples != shape.tile_elements()) {
    throw std::logic_error("a tile of another shape than the batch's");
  }
  if (raw) {
    std::memcpy(fill.input.data_ptr<std::uint8_t>() + row * samples, tile.bytes.data(), tile.bytes.size());
    const auto plane = shape.height * shape.width;
    auto* valid = fill.valid.data_ptr<std::uint8_t>() + row * plane;
    if (tile.valid.empty()) {
      std::memset(valid, 1, static_cast<std::size_t>(plane));
    } else {
      std::memcpy(valid, tile.valid.data(), tile.valid.size());
      fill.any_invalid = true;
    }
  } else {
    std::memcpy(fill.input.data_ptr<float>() + row * samples, tile.pixels.data(), tile.pixels.size() * sizeof(float));
  }
  TileData spare;
  spare.pixels = std::move(tile.pixels);
  spare.bytes = std::move(tile.bytes);
  readers.recycle(std::move(spare));
}

}  // namespace

std::size_t InFlightTiles::reader_queue() const {
  return static_cast<std::size_t>(std::max(1, batches_read_ahead * batch_size + workers));
}

std::size_t InFlightTiles::held_by_pipeline() const {
  return static_cast<std::size_t>(std::max(1, slots)) * static_cast<std::size_t>(std::max(1, batch_size));
}

InFlightTiles in_flight_tiles(int batch_size, int workers, const DeviceChoice& device) {
  return {batch_size, workers, device.is_cuda ? 2 : 1, pipeline_slots(device)};
}

PipelineStats run_batches(ReaderPool& readers, BatchDevice& device, BatchConsumer& consumer,
                          const PipelineOptions& options) {
  if (options.batch_size < 1) throw std::invalid_argument("batch_size must be at least 1");
  const auto started = Clock::now();
  SlotQueues queues(device.slots());
  std::vector<std::vector<TileData>> slot_tiles(static_cast<std::size_t>(device.slots()));
  std::optional<BatchShape> shape;
  {
    std::jthread post([&] { post_process(device, slot_tiles, queues, consumer, options, started); });
    try {
      while (const auto slot = queues.take_free()) {
        auto& tiles = slot_tiles[static_cast<std::size_t>(*slot)];
        SlotFill fill;
        double waited = 0;
        double stacked = 0;
        while (tiles.size() < static_cast<std::size_t>(options.batch_size)) {
          const auto waiting = Clock::now();
          auto tile = readers.next();
          waited += seconds_since(waiting);
          if (!tile) break;
          const auto stacking = Clock::now();
          if (!shape) shape = shape_of(*tile, options.batch_size);
          if (!fill.input.defined()) {
            fill.input = device.host_input(*slot, *shape);
            if (shape->dtype == torch::kByte) fill.valid = device.host_valid(*slot, *shape);
          }
          copy_into_slot(*tile, fill, *shape, static_cast<std::int64_t>(tiles.size()), readers);
          tiles.push_back(std::move(*tile));
          stacked += seconds_since(stacking);
        }
        queues.update([&](PipelineStats& stats) {
          stats.data_wait_s += waited;
          stats.stack_s += stacked;
        });
        if (tiles.empty() || queues.has_failed()) {
          tiles.clear();
          queues.give_back(*slot);
          break;
        }
        device.submit(*slot, static_cast<std::int64_t>(tiles.size()), fill.any_invalid);
        queues.submitted(*slot);
      }
    } catch (...) {
      queues.fail(std::current_exception());
    }
    queues.close();
  }  // the post-processing thread has consumed or collected every submitted slot
  if (const auto error = queues.error()) std::rethrow_exception(error);
  return queues.update([&](PipelineStats& stats) {
    stats.read_s = readers.stats().read_s;
    stats.elapsed_s = seconds_since(started);
  });
}

PipelineStats run_pipeline(ReaderPool& readers, TileModel& model, const DeviceChoice& device, BatchConsumer& consumer,
                           const PipelineOptions& options) {
  const auto on_device = make_model_device(model, device, options.raw_scaling);
  return run_batches(readers, *on_device, consumer, options);
}

}  // namespace mgpr::runtime
