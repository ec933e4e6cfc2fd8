// The runtime's GPU path: autocast precision, the copy stream, device timing and the
// whole pipeline on CUDA against the same pipeline on CPU. Runs only where LibTorch sees
// a CUDA device (the GPU machine); elsewhere every test is skipped with the reason.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "distributed/sharding.hpp"
#include "model/device_memory.hpp"
#include "model/model.hpp"
#include "pipeline/model_device.hpp"
#include "pipeline/pipeline.hpp"
#include "source/fake_source.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace rt = mgpr::runtime;

constexpr int kTileSize = 32;

fs::path scratch_dir() { return mgpr::test::program_temp_dir().path(); }

// Two logits per tile from a matrix product with fixed weights: the product is on
// autocast's reduced-precision list, so its output dtype shows which precision ran.
fs::path save_linear_model() {
  const auto file = scratch_dir() / "linear.pt";
  if (fs::exists(file)) return file;
  torch::jit::Module module("TileLinear");
  module.register_attribute("training", c10::BoolType::get(), false);
  const auto features = 3 * kTileSize * kTileSize;
  const auto weight = torch::linspace(-1, 1, features * 2).reshape({features, 2}) / features;
  module.register_parameter("weight", weight, /*is_buffer=*/false);
  module.define(R"(
def forward(self, x):
    return torch.mm(torch.flatten(x, 1), self.weight)
)");
  module.save(file.string());
  return file;
}

constexpr int kBatch = 4;
constexpr int kFakeTiles = 24;

// What the run plan would take from precision= and accelerator=.
struct TestRun {
  mgpr::Precision precision = mgpr::Precision::kFp32;
  mgpr::Accelerator accelerator = mgpr::Accelerator::kGpu;
};

TestRun gpu_config(mgpr::Precision precision) { return {precision}; }

// As the run plan does: the execution policy on the device's facts, then the model.
rt::TileModel load_model(const TestRun& run, const rt::DeviceChoice& device, int channels) {
  const auto plans = rt::plan_execution({run.precision, false, true}, rt::execution_facts(device));
  return rt::TileModel({save_linear_model().string(), {}, kTileSize}, device, channels, plans);
}

class CudaRuntime : public testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
    }
  }
};

torch::Tensor cpu_reference(const torch::Tensor& batch) {
  auto config = gpu_config(mgpr::Precision::kFp32);
  config.accelerator = mgpr::Accelerator::kCpu;
  auto model = load_model(config, rt::choose_device(config.accelerator, 0), 3);
  return model.forward(batch).toTensor();
}

TEST_F(CudaRuntime, Fp16RunsUnderAutocastWithFp32Input) {
  const auto config = gpu_config(mgpr::Precision::kFp16);
  const auto device = rt::choose_device(config.accelerator, 0);
  ASSERT_TRUE(device.is_cuda);
  auto model = load_model(config, device, 3);
  EXPECT_TRUE(model.uses_autocast());
  EXPECT_EQ(model.input_dtype(), torch::kFloat);
  const auto batch = torch::rand({4, 3, kTileSize, kTileSize});
  const auto output = model.forward(batch).toTensor();
  EXPECT_TRUE(output.is_cuda());
  EXPECT_EQ(output.scalar_type(), torch::kHalf);
  EXPECT_TRUE(torch::allclose(output.cpu().to(torch::kFloat), cpu_reference(batch), 1e-2, 1e-2));
}

TEST_F(CudaRuntime, Bf16RunsUnderAutocastOnAmpereOrNewer) {
  const auto config = gpu_config(mgpr::Precision::kBf16);
  const auto device = rt::choose_device(config.accelerator, 0);
  if (rt::compute_capability(device) < 80) GTEST_SKIP() << "bf16 needs compute capability 8.0 or newer";
  auto model = load_model(config, device, 3);
  const auto batch = torch::rand({4, 3, kTileSize, kTileSize});
  const auto output = model.forward(batch).toTensor();
  EXPECT_EQ(output.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::allclose(output.cpu().to(torch::kFloat), cpu_reference(batch), 5e-2, 5e-2));
}

// Three slots queued on the GPU before the first is collected: each slot's own input
// reaches the model (no copy overtakes another or reads a slot being refilled), each
// output comes back on the host, and the device's time lies within the wall time.
TEST_F(CudaRuntime, ModelDeviceKeepsEachQueuedSlotsBatchItsOwn) {
  const auto config = gpu_config(mgpr::Precision::kFp32);
  const auto device = rt::choose_device(config.accelerator, 0);
  auto model = load_model(config, device, 3);
  const auto on_gpu = rt::make_model_device(model, device);
  ASSERT_EQ(on_gpu->slots(), 3);
  const rt::BatchShape shape{4, 3, kTileSize, kTileSize};
  std::vector<torch::Tensor> sent;
  const auto started = std::chrono::steady_clock::now();
  for (int round = 0; round < 8; ++round) {
    for (int slot = 0; slot < 3; ++slot) {
      auto input = on_gpu->host_input(slot, shape);
      EXPECT_TRUE(input.is_pinned());
      input.copy_(torch::rand({4, 3, kTileSize, kTileSize}));
      sent.push_back(input.clone());
      on_gpu->submit(slot, 4, false);
    }
    double device_s = 0;
    for (int slot = 0; slot < 3; ++slot) {
      const auto collected = on_gpu->collect(slot);
      const auto logits = collected.output.toTensor();
      EXPECT_TRUE(logits.device().is_cpu());
      EXPECT_TRUE(torch::allclose(logits, cpu_reference(sent[static_cast<std::size_t>(round * 3 + slot)]), 1e-4, 1e-4))
          << "round " << round << " slot " << slot;
      device_s += collected.device_s;
    }
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_GT(device_s, 0.0);
    EXPECT_LE(device_s, wall_s);
  }
}

// Keeps each tile's logits and the pixels its batch's host input held for it when the
// consumer got them (what the crop classifier reads), on the host.
class RecordOutputs final : public rt::BatchConsumer {
 public:
  void consume(std::span<const rt::TileData> tiles, const torch::IValue& output) override {
    const auto logits = output.toTensor().to(torch::kCPU, torch::kFloat);
    for (std::size_t i = 0; i < tiles.size(); ++i) by_tile[tiles[i].tile.id.row] = logits[static_cast<long>(i)];
  }
  void consume_with_inputs(std::span<const rt::TileData> tiles, const torch::IValue& output,
                           const rt::BatchInput& input) override {
    EXPECT_TRUE(input.samples.device().is_cpu());
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      pixels_by_tile[tiles[i].tile.id.row] = input.samples[static_cast<long>(i)].clone();
    }
    consume(tiles, output);
  }
  std::map<int, torch::Tensor> by_tile;
  std::map<int, torch::Tensor> pixels_by_tile;
};

rt::PipelineStats run_fake(const TestRun& config, RecordOutputs& outputs) {
  const auto device = rt::choose_device(config.accelerator, 0);
  const auto source = rt::make_fake_source({kFakeTiles, 0.0}, kTileSize);
  auto model = load_model(config, device, source->channels());
  return rt::run_pipeline({*source, 2, rt::make_static_feed(source->tiles(), 0, 1), 12}, model, device, outputs,
                          {kBatch, {}, {}})
      .stats;
}

TEST_F(CudaRuntime, PipelineOnGpuMatchesCpuTileForTile) {
  RecordOutputs on_gpu;
  const auto stats = run_fake(gpu_config(mgpr::Precision::kFp32), on_gpu);
  auto cpu_config = gpu_config(mgpr::Precision::kFp32);
  cpu_config.accelerator = mgpr::Accelerator::kCpu;
  RecordOutputs on_cpu;
  run_fake(cpu_config, on_cpu);

  ASSERT_EQ(on_gpu.by_tile.size(), 24U);
  ASSERT_EQ(on_cpu.by_tile.size(), 24U);
  for (const auto& [tile, logits] : on_cpu.by_tile) {
    EXPECT_TRUE(torch::allclose(on_gpu.by_tile.at(tile), logits, 1e-4, 1e-4)) << "tile " << tile;
  }
  // The pinned slot a batch went to the card from still held the batch's own tiles when
  // its output was consumed: no later batch had been read into it.
  ASSERT_EQ(on_gpu.pixels_by_tile.size(), 24U);
  for (const auto& [tile, pixels] : on_cpu.pixels_by_tile) {
    EXPECT_TRUE(torch::equal(on_gpu.pixels_by_tile.at(tile), pixels)) << "tile " << tile;
  }
  EXPECT_EQ(stats.tiles, 24);
  EXPECT_EQ(stats.batches, 6);
  EXPECT_GT(stats.model_s, 0.0);
  EXPECT_LE(stats.model_s, stats.elapsed_s);
  EXPECT_GT(stats.memory_peak_bytes, 0);
  EXPECT_GT(stats.memory_total_bytes, stats.memory_peak_bytes);
  // The card's use holds the tensors, the allocator's cache and the CUDA context.
  EXPECT_GT(stats.memory_device_peak_bytes, stats.memory_peak_bytes);
  EXPECT_LE(stats.memory_device_peak_bytes, stats.memory_total_bytes);
}

}  // namespace
