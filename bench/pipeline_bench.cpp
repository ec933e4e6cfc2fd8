// End-to-end tiles/s against model-only tiles/s on the same tiles, in one run: the ratio
// says how much of the reading the pipeline hides behind compute (goal: >= 0.95 on CPU).
// The two measures alternate --rounds times and the medians are compared: on a small,
// shared machine one pass of each is mostly noise.
// On a GPU (accelerator=gpu) it also reports the forward passes' share of the wall and memory.
// Not a test; bench/run-cpu-benchmarks and bench/gpu-check print its figures
// for docs/benchmarks.md.
#include <ATen/Context.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

#include "app/run_plan.hpp"
#include "bench_timing.hpp"
#include "detection_dump.hpp"
#include "distributed/sharding.hpp"
#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "model/backend_info.hpp"
#include "model/device_memory.hpp"
#include "model/model.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/raw_scaler.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"

namespace {

namespace rt = mgpr::runtime;
using mgpr::bench::Clock;
using mgpr::bench::median;
using mgpr::bench::seconds_since;

class DiscardOutputs final : public rt::BatchConsumer {
 public:
  void consume(std::span<const rt::TileData>, const torch::IValue&) override {}
};

// The source's first `batch_size` tiles (again from the first when it has fewer), read
// and scaled as the pipeline gives them to the model: [B, C, H, W] float32 on the host.
torch::Tensor first_tiles_as_batch(const rt::TileSource& source, int batch_size) {
  const auto& tiles = source.tiles();
  if (tiles.empty()) throw std::runtime_error("no tiles to measure");
  const auto reader = source.open_reader();
  std::vector<torch::Tensor> rows;
  for (int i = 0; i < batch_size; ++i) {
    rt::TileData data;
    reader->read(tiles[static_cast<std::size_t>(i) % tiles.size()], data);
    const std::vector<std::int64_t> shape{1, data.channels, data.height, data.width};
    if (data.bytes.empty()) {
      rows.push_back(torch::from_blob(data.pixels.data(), shape, torch::kFloat).clone());
      continue;
    }
    const auto raw = torch::from_blob(data.bytes.data(), shape, rt::raw_dtype(data.raw_sample));
    torch::Tensor valid;
    if (!data.valid.empty()) valid = torch::from_blob(data.valid.data(), {1, data.height, data.width}, torch::kByte);
    const c10::InferenceMode inference;
    rows.push_back(rt::RawScaler(*source.raw_scaling(), torch::Device(torch::kCPU))(raw, valid).clone());
  }
  return torch::cat(rows, 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> arguments;
  int repeats = 1;
  int rounds = 3;
  std::string boxes_path;
  bool no_tf32 = false;
  CLI::App app{"mgpr-bench-pipeline: end-to-end against model-only tiles/s on the same tiles"};
  app.add_option("arguments", arguments, "RASTER paths and key=value overrides, as for mgpr")->required();
  app.add_option("--repeats", repeats, "passes over the tiles in each measure")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "model-only and end-to-end measures, alternated; medians reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--boxes", boxes_path, "task=detect: write the first end-to-end round's boxes, a row each, to FILE");
  app.add_flag("--no-tf32", no_tf32,
               "GPU: fp32 convolutions and matrix products in IEEE fp32, not TF32 (LibTorch's default on Ampere and "
               "newer), to tell TF32's rounding from other differences against a CPU");
  CLI11_PARSE(app, argc, argv);
  try {
    auto config = mgpr::resolve_config({}, arguments);
    // One thread unless told: a figure that does not depend on the machine's CPU count.
    if (config.threads == 0) config.threads = 1;
    const auto plan = rt::make_run_plan(config, mgpr::RankEnvironment{});
    const auto backend = rt::configure_backend(plan.threads);
    if (no_tf32) {
      at::globalContext().setAllowTF32CuDNN(false);
      at::globalContext().setAllowTF32CuBLAS(false);
      fmt::print("mgpr-bench-pipeline: TF32 off (cuDNN and cuBLAS in IEEE fp32)\n");
    }
    const auto& device = plan.device;
    const auto source = rt::make_tile_source(plan.source);
    rt::TileModel model(plan.model, device, source->channels(), plan.execution);
    const int batch_size = plan.in_flight.batch_size;
    const int tile_size = plan.source.tile_size;
    std::vector<rt::Tile> repeated;
    for (int r = 0; r < repeats; ++r) repeated.insert(repeated.end(), source->tiles().begin(), source->tiles().end());
    const auto tile_count = static_cast<std::int64_t>(repeated.size());
    const auto batches = (tile_count + batch_size - 1) / batch_size;

    // Model-only: the batch already on the device, so the figure is the model's alone;
    // the image's own tiles, so a detector sees what it sees end to end.
    const auto batch = first_tiles_as_batch(*source, batch_size).to(device.device);
    const auto wait_for_device = [&] {
      if (device.is_cuda) torch::cuda::synchronize();
    };
    // The profiling executor specialises on the first runs at the batch's shape; CUDA
    // also picks its kernels then.
    for (int i = 0; i < 3; ++i) model.forward(batch);
    wait_for_device();

    std::vector<double> model_rates;
    std::vector<double> end_to_end_rates;
    rt::PipelineStats stats;
    for (int round = 1; round <= rounds; ++round) {
      const auto model_started = Clock::now();
      for (std::int64_t i = 0; i < batches; ++i) model.forward(batch);
      wait_for_device();
      const double model_s = seconds_since(model_started);
      model_rates.push_back(static_cast<double>(batches * batch_size) / model_s);

      DiscardOutputs discard;
      std::optional<mgpr::bench::DetectionDump> boxes;
      if (!boxes_path.empty() && round == 1) boxes.emplace(boxes_path, plan.output.score_threshold, plan.model.model);
      rt::BatchConsumer& consumer = boxes ? static_cast<rt::BatchConsumer&>(*boxes) : discard;
      stats = rt::run_pipeline({*source, plan.in_flight.workers, rt::make_static_feed(repeated, 0, 1),
                                plan.in_flight.reader_queue()},
                               model, device, consumer, {batch_size, {}, source->raw_scaling()})
                  .stats;
      end_to_end_rates.push_back(static_cast<double>(stats.tiles) / stats.elapsed_s);
      fmt::print(
          "round {}: model-only {} tiles in {:.2f} s = {:.2f} tiles/s; end-to-end {} tiles in {:.2f} s = {:.2f} "
          "tiles/s (forward passes {:.2f} s, waited {:.2f} s for data, readers busy {:.2f} s)\n",
          round, batches * batch_size, model_s, model_rates.back(), stats.tiles, stats.elapsed_s,
          end_to_end_rates.back(), stats.model_s, stats.data_wait_s, stats.read_s);
    }
    const double model_rate = median(model_rates);
    const double end_to_end_rate = median(end_to_end_rates);
    fmt::print("mgpr model-only: {:.2f} tiles/s (median of {})\n", model_rate, rounds);
    fmt::print("mgpr end-to-end: {:.2f} tiles/s (median of {})\n", end_to_end_rate, rounds);
    fmt::print(
        "mgpr end-to-end / model-only = {:.3f} (tile {}, batch {}, workers {}, threads {}, {} tiles a measure, {})\n",
        end_to_end_rate / model_rate, tile_size, batch_size, plan.in_flight.workers, backend.threads, tile_count,
        model.description());
    if (device.is_cuda) {
      constexpr double kGiB = 1 << 30;
      // The forward passes' seconds summed over the passes in flight: a detector's two
      // passes at once sum past 100 %, so this is not how busy the device was (the share
      // of time a kernel ran: bench/gpu-check samples nvidia-smi's utilisation for that).
      fmt::print(
          "mgpr device (last round): {} forward passes {:.1f}% of end-to-end (summed over the passes in flight), "
          "memory avg {:.2f} GiB peak {:.2f} GiB of {:.2f} GiB\n",
          rt::device_product_name(device), 100 * stats.model_s / stats.elapsed_s,
          static_cast<double>(stats.memory_avg_bytes) / kGiB, static_cast<double>(stats.memory_peak_bytes) / kGiB,
          static_cast<double>(stats.memory_total_bytes) / kGiB);
    }
    return 0;
  } catch (const std::exception& error) {
    fmt::print(stderr, "mgpr-bench-pipeline: {}\n", error.what());
    return mgpr::kExitUsage;
  }
}
