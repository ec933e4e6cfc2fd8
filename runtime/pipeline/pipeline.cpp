#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "pipeline/batch_slots.hpp"
#include "pipeline/model_device.hpp"

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long every reader may wait on the feed before the batch being filled goes with
// fewer tiles: long beside a claim on the store (a millisecond), short beside the pacing's
// patience (tile_loop.cpp).
constexpr auto kFeedHold = std::chrono::milliseconds(100);

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

// A blocking device's forward passes (BatchDevice::forward_blocks), each on one of a few
// threads of their own, started in the order submitted. A detector's pass holds its
// thread until the device is done; on the thread that submits it would keep one batch in
// flight and leave the device idle during the pass's own host work. With one thread
// fewer than the slots, two passes run at once while the host fills the last slot, so
// one pass's host work overlaps the other's device work, and the device memory holds at
// most that many batches' activations.
class ForwardThreads {
 public:
  ForwardThreads(BatchDevice& device, int threads)
      : device_(device), passes_(static_cast<std::size_t>(device.slots())) {
    threads_.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~ForwardThreads() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    threads_.clear();  // joined here, while the queue and the passes they use still exist
  }
  ForwardThreads(const ForwardThreads&) = delete;
  ForwardThreads& operator=(const ForwardThreads&) = delete;

  // Queues the pass of `slot`, submitted to the device just before.
  void start(int slot) {
    {
      const std::lock_guard lock(mutex_);
      passes_.at(static_cast<std::size_t>(slot)) = Pass{};
      queue_.push_back(slot);
    }
    changed_.notify_all();
  }

  // Waits until the pass of `slot` has returned; rethrows what escaped it (the device's
  // forward() reports its failures through collect(), so only a breach of that).
  void wait(int slot) {
    std::unique_lock lock(mutex_);
    auto& pass = passes_.at(static_cast<std::size_t>(slot));
    changed_.wait(lock, [&] { return pass.done; });
    if (pass.error) std::rethrow_exception(std::exchange(pass.error, nullptr));
  }

 private:
  struct Pass {
    bool done = false;
    std::exception_ptr error;
  };

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      // Every pass started is waited for before the pipeline ends, so a stop finds the
      // queue empty; were it not, nobody would wait for the passes left in it.
      if (stopping_) return;
      const int slot = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::exception_ptr error;
      try {
        device_.forward(slot);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      auto& pass = passes_[static_cast<std::size_t>(slot)];
      pass.error = error;
      pass.done = true;
      changed_.notify_all();
    }
  }

  BatchDevice& device_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<int> queue_;     // slots submitted whose pass has not started, oldest first
  std::vector<Pass> passes_;  // by slot
  bool stopping_ = false;
  std::vector<std::jthread> threads_;  // last: joined before the members above go away
};

// The post-processing stage: collects each submitted slot's output, in order, hands it
// to the consumer and frees the slot. When the filling stage fails, what it submitted
// before is still consumed: those results are computed. When this stage fails (the
// device, the consumer) it still collects what is in flight, since the device must be
// done with a slot before it is freed, but consumes nothing more.
void post_process(BatchDevice& device, ForwardThreads* forwards, BatchSlots& queues, BatchConsumer& consumer,
                  const PipelineOptions& options, Clock::time_point started) {
  MemorySampler memory(device);
  bool consuming = true;
  while (const auto slot = queues.next_submitted()) {
    const auto& tiles = queues.tiles(*slot);
    try {
      if (forwards != nullptr) forwards->wait(*slot);
      auto batch = device.collect(*slot);
      if (consuming) {
        consumer.consume_with_inputs(tiles, batch.output, queues.input(*slot));
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
  // Before the slots and the post-processing thread: it outlives every wait for a pass.
  std::optional<ForwardThreads> forwards;
  if (device.forward_blocks()) forwards.emplace(device, std::max(1, device.slots() - 1));
  ForwardThreads* const passes = forwards ? &*forwards : nullptr;
  BatchSlots slots(device, options.batch_size);
  PipelineRun run;
  {
    std::jthread post([&] { post_process(device, passes, slots, consumer, options, started); });
    // Declared after the post-processing thread, so its readers are stopped and joined
    // before that thread is: no reader is still copying into a slot when this returns.
    ReaderPool readers(reading.source, reading.workers, reading.feed, reading.queue, &slots,
                       [&consumer](int image, const std::string& reason) { consumer.raster_failed(image, reason); });
    double waited = 0;  // for the readers, since the last batch was submitted
    const auto submit = [&](int slot) {
      device.submit(slot, static_cast<std::int64_t>(slots.tiles(slot).size()), slots.any_invalid(slot));
      if (passes != nullptr) passes->start(slot);
      slots.submitted(slot);
      slots.update([&](PipelineStats& stats) { stats.data_wait_s += waited; });
      waited = 0;
    };
    try {
      while (true) {
        const auto waiting = Clock::now();
        while (!readers.wait_for_tile(kFeedHold)) {
          // The feed holds every reader (the pacing waits for rank 0's writer, which may
          // wait for the tiles this batch holds): the batch goes as it is.
          if (!readers.feed_holds(kFeedHold)) continue;
          while (const auto partial = slots.take_full(true)) submit(*partial);
        }
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
