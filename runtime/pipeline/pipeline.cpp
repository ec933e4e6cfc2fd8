#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <thread>

#include "pipeline/batch_slots.hpp"
#include "pipeline/model_device.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

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
void post_process(BatchDevice& device, BatchSlots& queues, BatchConsumer& consumer, const PipelineOptions& options,
                  Clock::time_point started) {
  MemorySampler memory(device);
  bool consuming = true;
  while (const auto slot = queues.next_submitted()) {
    const auto& tiles = queues.tiles(*slot);
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
    queues.give_back(*slot);
  }
  queues.update([&](PipelineStats& stats) { memory.sample_if_due(stats, true); });
}

}  // namespace

std::size_t InFlightTiles::reader_queue() const {
  return static_cast<std::size_t>(std::max(1, batches_read_ahead * batch_size + workers));
}

std::size_t InFlightTiles::held_by_pipeline() const {
  return static_cast<std::size_t>(std::max(1, slots)) * static_cast<std::size_t>(std::max(1, batch_size)) +
         static_cast<std::size_t>(std::max(1, workers));
}

InFlightTiles in_flight_tiles(int batch_size, int workers, const DeviceChoice& device) {
  return {batch_size, workers, device.is_cuda ? 2 : 1, pipeline_slots(device)};
}

PipelineRun run_batches(const TileReading& reading, BatchDevice& device, BatchConsumer& consumer,
                        const PipelineOptions& options) {
  if (options.batch_size < 1) throw std::invalid_argument("batch_size must be at least 1");
  const auto started = Clock::now();
  BatchSlots slots(device, options.batch_size);
  PipelineRun run;
  {
    std::jthread post([&] { post_process(device, slots, consumer, options, started); });
    // Declared after the post-processing thread, so its readers are stopped and joined
    // before that thread is: no reader is still copying into a slot when this returns.
    ReaderPool readers(reading.source, reading.workers, reading.feed, reading.queue, &slots);
    double waited = 0;  // for the readers, since the last batch was submitted
    const auto submit = [&](int slot) {
      device.submit(slot, static_cast<std::int64_t>(slots.tiles(slot).size()), slots.any_invalid(slot));
      slots.submitted(slot);
      slots.update([&](PipelineStats& stats) { stats.data_wait_s += waited; });
      waited = 0;
    };
    try {
      while (true) {
        const auto waiting = Clock::now();
        auto tile = readers.next();
        waited += seconds_since(waiting);
        if (!tile) break;
        slots.arrived(std::move(*tile));
        while (const auto full = slots.take_full(false)) submit(*full);
        if (slots.has_failed()) break;
      }
      while (const auto last = slots.take_full(true)) submit(*last);
    } catch (...) {
      slots.fail(std::current_exception());
    }
    slots.close();
    run.failures = readers.failures();
    const auto read_s = readers.stats().read_s;
    slots.update([&](PipelineStats& stats) { stats.read_s = read_s; });
  }  // the readers are joined; the post-processing thread has consumed or collected every submitted slot
  if (const auto error = slots.error()) std::rethrow_exception(error);
  run.stats = slots.update([&](PipelineStats& stats) { stats.elapsed_s = seconds_since(started); });
  return run;
}

PipelineRun run_pipeline(const TileReading& reading, TileModel& model, const DeviceChoice& device,
                         BatchConsumer& consumer, const PipelineOptions& options) {
  const auto on_device = make_model_device(model, device, options.raw_scaling);
  return run_batches(reading, *on_device, consumer, options);
}

}  // namespace mgpr::runtime
