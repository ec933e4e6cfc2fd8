// End-to-end against device-only tiles/s on the simulated asynchronous device
// (runtime/pipeline/simulated_device.hpp), with a GPU's costs but no GPU: the device's
// latencies are set (an H100's ResNet-50 batch of 16 1024² tiles took 28 ms), the host's
// costs are real (each tile is copied into its batch slot, 12 MiB a tile at 1024², 15-25
// ms a batch of 16 on the machines measured) plus a set read time per tile on the reader
// threads. The ratio says whether the scheduling keeps the device's queue full (goal:
// >= 0.95). Device-only keeps the same device busy with batches already in their slots.
// --detector-host-ms makes every forward pass hold its thread as a detector's does
// (BatchDevice::forward_blocks), which the pipeline runs on threads of their own.
// The two measures alternate --rounds times and the medians are compared. Not a test;
// figures go to docs/benchmarks.md with the command.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "bench_timing.hpp"
#include "distributed/sharding.hpp"
#include "mgpr/exit_codes.hpp"
#include "pipeline/model_device.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/simulated_device.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"

namespace {

namespace rt = mgpr::runtime;
using mgpr::bench::Clock;
using mgpr::bench::median;
using mgpr::bench::seconds_since;

// Tiles that cost their read time and nothing else: a recycled buffer is handed on as it
// is (its contents do not matter to the simulated device), so the host's cost in the
// pipeline is the copy into the batch slot.
class TimedSource final : public rt::TileSource {
 public:
  TimedSource(int count, int tile_size, int channels, double read_s, bool raw)
      : tile_size_(tile_size), channels_(channels), read_s_(read_s), raw_(raw) {
    for (int i = 0; i < count; ++i)
      tiles_.push_back({rt::TileId{0, i, 0}, rt::PixelWindow{0, 0, tile_size, tile_size}});
  }
  [[nodiscard]] const std::vector<rt::Tile>& tiles() const override { return tiles_; }
  [[nodiscard]] const std::vector<rt::RasterDescription>& rasters() const override { return no_rasters_; }
  [[nodiscard]] int channels() const override { return channels_; }
  [[nodiscard]] int tile_size() const override { return tile_size_; }
  [[nodiscard]] std::unique_ptr<rt::TileReader> open_reader() const override { return std::make_unique<Reader>(*this); }

 private:
  class Reader final : public rt::TileReader {
   public:
    explicit Reader(const TimedSource& source) : source_(source) {}
    void read(const rt::Tile& tile, rt::TileData& out) override {
      const auto started = Clock::now();
      if (source_.read_s_ > 0) std::this_thread::sleep_for(std::chrono::duration<double>(source_.read_s_));
      out.tile = tile;
      out.channels = source_.channels_;
      out.height = source_.tile_size_;
      out.width = source_.tile_size_;
      const auto samples = static_cast<std::size_t>(source_.channels_) * static_cast<std::size_t>(source_.tile_size_) *
                           static_cast<std::size_t>(source_.tile_size_);
      if (source_.raw_) {
        out.bytes.resize(samples);
      } else {
        out.pixels.resize(samples);
      }
      out.valid.clear();
      out.read_s = seconds_since(started);
    }

   private:
    const TimedSource& source_;
  };

  std::vector<rt::Tile> tiles_;
  std::vector<rt::RasterDescription> no_rasters_;
  int tile_size_;
  int channels_;
  double read_s_;
  bool raw_;  // 8-bit samples (as from a Byte raster), else float32
};

class DiscardOutputs final : public rt::BatchConsumer {
 public:
  void consume(std::span<const rt::TileData>, const torch::IValue&) override {}
};

// The device alone: every slot's batch is already in place, and a new one is submitted
// as soon as a slot is collected, so the device's queue is never empty.
double device_only_seconds(const rt::SimulatedDeviceOptions& options, const rt::BatchShape& shape,
                           std::int64_t batches) {
  rt::SimulatedDevice device(options);
  for (int slot = 0; slot < device.slots(); ++slot) device.host_input(slot, shape);
  const auto started = Clock::now();
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    const int slot = static_cast<int>(batch % device.slots());
    if (batch >= device.slots()) device.collect(slot);
    device.submit(slot, shape.batch, false);
  }
  for (std::int64_t batch = std::max<std::int64_t>(0, batches - device.slots()); batch < batches; ++batch) {
    device.collect(static_cast<int>(batch % device.slots()));
  }
  return seconds_since(started);
}

}  // namespace

int main(int argc, char** argv) {
  int tiles = 512;
  int batch_size = 16;
  int tile_size = 1024;
  int channels = 3;
  int workers = 2;
  int slots = 0;
  int rounds = 3;
  double compute_ms = 28;
  double copy_ms = 4;
  double copy_back_ms = 0.5;
  double jitter = 0.1;
  double read_ms = 0;
  bool float_tiles = false;
  double forward_host_ms = -1;
  CLI::App app{"mgpr-bench-fake-device: end-to-end against device-only tiles/s on the simulated GPU"};
  app.add_option("--tiles", tiles, "tiles a measure")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch_size, "tiles a batch")->check(CLI::PositiveNumber);
  app.add_option("--tile-size", tile_size, "tile side in pixels")->check(CLI::PositiveNumber);
  app.add_option("--channels", channels, "bands a tile")->check(CLI::PositiveNumber);
  app.add_option("--workers", workers, "reader threads")->check(CLI::PositiveNumber);
  app.add_option("--slots", slots, "batch slots (default: as on a GPU)")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "device-only and end-to-end measures, alternated")->check(CLI::PositiveNumber);
  app.add_option("--compute-ms", compute_ms, "the device's forward pass, a batch");
  app.add_option("--copy-ms", copy_ms, "the copy to the device, a batch");
  app.add_option("--copy-back-ms", copy_back_ms, "the output's copy back, a batch");
  app.add_option("--jitter", jitter, "each latency scaled by a factor in [1 - jitter, 1 + jitter]");
  app.add_option("--read-ms", read_ms, "a reader thread's time a tile (besides the copy into the slot)");
  app.add_flag("--float", float_tiles, "float32 tiles (rasters other than 8-bit) instead of raw 8-bit ones");
  app.add_option("--detector-host-ms", forward_host_ms,
                 "a detector's forward pass: it holds its thread this long (its host work), then until the device is "
                 "done with the batch (default: a pass that only queues work)");
  CLI11_PARSE(app, argc, argv);
  try {
    const rt::DeviceChoice gpu{torch::Device(torch::kCUDA, 0), true, "simulated"};
    rt::SimulatedDeviceOptions options;
    options.slots = slots > 0 ? slots : rt::pipeline_slots(gpu);
    options.compute_s = compute_ms / 1000;
    options.copy_s = copy_ms / 1000;
    options.copy_back_s = copy_back_ms / 1000;
    options.jitter = jitter;
    options.read_inputs = false;
    options.blocking_forward = forward_host_ms >= 0;
    options.forward_host_s = std::max(0.0, forward_host_ms / 1000);
    const rt::BatchShape shape{batch_size, channels, tile_size, tile_size, float_tiles ? torch::kFloat : torch::kByte};
    const std::int64_t batches = (tiles + batch_size - 1) / batch_size;
    const TimedSource source(tiles, tile_size, channels, read_ms / 1000, !float_tiles);
    const auto in_flight = rt::in_flight_tiles(batch_size, workers, gpu);

    std::vector<double> device_rates;
    std::vector<double> end_to_end_rates;
    for (int round = 1; round <= rounds; ++round) {
      options.seed = static_cast<std::uint32_t>(round);
      // The device's own time: its queue never empty, whether or not a pass holds the host.
      auto unblocked = options;
      unblocked.blocking_forward = false;
      const double device_s = device_only_seconds(unblocked, shape, batches);
      device_rates.push_back(static_cast<double>(tiles) / device_s);

      rt::SimulatedDevice device(options);
      DiscardOutputs discard;
      const auto stats =
          rt::run_batches({source, workers, rt::make_static_feed(source.tiles(), 0, 1), in_flight.reader_queue()},
                          device, discard, {batch_size, {}, {}})
              .stats;
      end_to_end_rates.push_back(static_cast<double>(stats.tiles) / stats.elapsed_s);
      fmt::print(
          "round {}: device-only {:.1f} tiles/s; end-to-end {:.1f} tiles/s, device busy {:.1f}%, copying into slots "
          "{:.1f} ms a batch, waiting for readers {:.1f} ms a batch, at most {} batches in flight, {} on the device\n",
          round, device_rates.back(), end_to_end_rates.back(), 100 * device.checks().busy_s / stats.elapsed_s,
          1000 * stats.stack_s / static_cast<double>(stats.batches),
          1000 * stats.data_wait_s / static_cast<double>(stats.batches), device.checks().most_in_flight,
          device.checks().most_on_device);
    }
    const double ratio = median(end_to_end_rates) / median(device_rates);
    fmt::print("simulated device: end-to-end {:.1f} tiles/s / device-only {:.1f} tiles/s = {:.3f} (medians of {})\n",
               median(end_to_end_rates), median(device_rates), ratio, rounds);
    fmt::print(
        "(tiles {}, batch {}, tile {}x{}x{} {}, workers {}, device {} ms + copies {} + {} ms, jitter {}, read {} ms a "
        "tile{})\n",
        tiles, batch_size, channels, tile_size, tile_size, float_tiles ? "float32" : "uint8", workers, compute_ms,
        copy_ms, copy_back_ms, jitter, read_ms,
        options.blocking_forward ? fmt::format(", blocking forward with {} ms of host work", forward_host_ms) : "");
    return 0;
  } catch (const std::exception& error) {
    fmt::print(stderr, "mgpr-bench-fake-device: {}\n", error.what());
    return mgpr::kExitUsage;
  }
}
