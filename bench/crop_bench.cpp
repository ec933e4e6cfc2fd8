// Crops classified a second by task=detect's crop classifier (classify_model=,
// runtime/crops/crop_classifier.hpp) on the batches the detect task hands it: TILES tiles
// of raw 8-bit samples in pinned host memory, BOXES boxes in each, every box cut,
// resized to the classifier's input on the device and classified. Against the
// classifier alone on crops already on the device at its input size, in batches of the
// same size: the ratio says what cutting and resizing cost beside the model. The two
// measures alternate --rounds times and the medians are compared. Not a test; figures in
// docs/benchmarks.md ("Crops classified").
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "bench_timing.hpp"
#include "crops/crop_classifier.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "model/backend_info.hpp"
#include "model/device_memory.hpp"
#include "model/execution_policy.hpp"
#include "model/model.hpp"

namespace {

namespace rt = mgpr::runtime;
using mgpr::bench::Clock;
using mgpr::bench::median;
using mgpr::bench::seconds_since;

struct Layout {
  int tiles = 8;
  int tile_size = 400;
  int boxes = 50;
  int box_min = 20;
  int box_max = 60;
};

// Square-ish boxes of BOX_MIN..BOX_MAX px anywhere in each tile, from one seed.
std::vector<std::vector<rt::Box>> random_boxes(const Layout& layout) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> side(layout.box_min, layout.box_max);
  std::vector<std::vector<rt::Box>> boxes(static_cast<std::size_t>(layout.tiles));
  for (auto& tile : boxes) {
    for (int i = 0; i < layout.boxes; ++i) {
      const int width = side(random);
      const int height = side(random);
      std::uniform_int_distribution<int> x(0, layout.tile_size - width);
      std::uniform_int_distribution<int> y(0, layout.tile_size - height);
      const double x1 = x(random) + 0.25;
      const double y1 = y(random) + 0.5;
      tile.push_back(rt::Box{{}, x1, y1, x1 + width - 0.5, y1 + height - 0.75, 0.9, 0});
    }
  }
  return boxes;
}

mgpr::Precision precision_named(const std::string& name) {
  if (name == "fp32") return mgpr::Precision::kFp32;
  if (name == "fp16") return mgpr::Precision::kFp16;
  if (name == "bf16") return mgpr::Precision::kBf16;
  throw mgpr::UsageError(fmt::format("--precision {}: one of fp32, fp16, bf16", name));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  int input_size = 224;
  std::string accelerator = "cpu";
  std::string precision = "fp32";
  int threads = 1;
  int rounds = 3;
  int repeats = 4;
  int batch_size = rt::CropClassifierOptions{}.batch_size;
  Layout layout;
  CLI::App app{"mgpr-bench-crops: crops classified a second, against the crop classifier alone"};
  app.add_option("model", model_path, "the crop classifier (TorchScript, [N, C, S, S] -> [N, classes])")->required();
  app.add_option("--input-size", input_size, "the classifier's input side S (its card's tile_size)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--accelerator", accelerator, "cpu or gpu")->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_option("--precision", precision, "fp32, fp16 or bf16 (a GPU's autocast)");
  app.add_option("--threads", threads, "intra-op threads on the CPU (0: LibTorch's choice)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rounds", rounds, "end-to-end and model-only measures, alternated")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "batches of tiles in each measure")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch_size, "crops a forward pass (the crop classifier's own)")->check(CLI::Range(1, 4096));
  app.add_option("--tiles", layout.tiles, "tiles a batch")->check(CLI::Range(1, 1024));
  app.add_option("--tile", layout.tile_size, "tile side, px")->check(CLI::Range(16, 8192));
  app.add_option("--boxes", layout.boxes, "boxes a tile")->check(CLI::Range(1, 100000));
  app.add_option("--box-min", layout.box_min, "smallest box side, px")->check(CLI::Range(1, 8192));
  app.add_option("--box-max", layout.box_max, "largest box side, px")->check(CLI::Range(1, 8192));
  CLI11_PARSE(app, argc, argv);
  try {
    if (layout.box_min > layout.box_max || layout.box_max > layout.tile_size) {
      throw mgpr::UsageError("--box-min <= --box-max <= --tile, please");
    }
    const auto backend = rt::configure_backend(threads);
    const auto device = rt::choose_device(accelerator == "gpu" ? mgpr::Accelerator::kGpu : mgpr::Accelerator::kCpu, 0);
    const auto plans = rt::plan_execution(
        {precision_named(precision), true, true, batch_size, input_size, 0, false, mgpr::Task::kClassify},
        rt::execution_facts(device));
    rt::CropClassifierOptions options;
    options.model = {model_path, {}, input_size, "", {}};
    options.batch_size = batch_size;
    // The detector's values are raw / 255; the classifier's ImageNet's, as a card of
    // scripts/mgpr_export.py cropmodel gives them.
    options.mean = {0.485, 0.456, 0.406};
    options.std = {0.229, 0.224, 0.225};
    const rt::RawScaling raw{{1 / 255.F, 1 / 255.F, 1 / 255.F}, {0, 0, 0}, rt::RawSample::kUInt8};
    rt::CropClassifier crops(options, device, 3, plans, raw);
    rt::TileModel alone(options.model, device, 3, plans);

    auto tiles = torch::randint(0, 256, {layout.tiles, 3, layout.tile_size, layout.tile_size}, torch::kByte);
    if (device.is_cuda) tiles = tiles.pin_memory();
    const auto boxes = random_boxes(layout);
    const auto crops_a_batch = static_cast<std::int64_t>(layout.tiles) * layout.boxes;
    const auto ready = torch::rand({options.batch_size, 3, input_size, input_size}).to(device.device);
    const auto passes = (crops_a_batch + options.batch_size - 1) / options.batch_size;
    const auto wait_for_device = [&] {
      if (device.is_cuda) torch::cuda::synchronize();
    };
    {
      const torch::InferenceMode inference;
      for (int i = 0; i < 3; ++i) alone.forward(ready);
    }
    (void)crops.classify({tiles}, boxes);
    wait_for_device();

    std::vector<double> end_to_end;
    std::vector<double> model_only;
    for (int round = 1; round <= rounds; ++round) {
      const auto cut_started = Clock::now();
      std::int64_t classified = 0;
      for (int r = 0; r < repeats; ++r) {
        for (const auto& tile : crops.classify({tiles}, boxes)) {
          classified += std::ranges::count_if(tile, [](const rt::CropClass& answer) { return answer.label >= 0; });
        }
      }
      wait_for_device();
      end_to_end.push_back(static_cast<double>(classified) / seconds_since(cut_started));
      const auto model_started = Clock::now();
      {
        const torch::InferenceMode inference;
        for (std::int64_t i = 0; i < passes * repeats; ++i) alone.forward(ready);
      }
      wait_for_device();
      model_only.push_back(static_cast<double>(passes * repeats * options.batch_size) / seconds_since(model_started));
      fmt::print("round {}: end to end {:.1f} crops/s ({} crops); model-only {:.1f} crops/s\n", round,
                 end_to_end.back(), classified, model_only.back());
    }
    fmt::print(
        "mgpr crops end to end / model-only = {:.3f} (end to end {:.1f} crops/s, model-only {:.1f} crops/s, medians "
        "of {}; {} tiles of {} px a batch, {} boxes of {}-{} px each, input {} px, batches of {}, {}, {} threads, "
        "{})\n",
        median(end_to_end) / median(model_only), median(end_to_end), median(model_only), rounds, layout.tiles,
        layout.tile_size, layout.boxes, layout.box_min, layout.box_max, input_size, options.batch_size, precision,
        backend.threads, device.is_cuda ? rt::device_product_name(device) : std::string("cpu"));
    return 0;
  } catch (const std::exception& error) {
    fmt::print(stderr, "mgpr-bench-crops: {}\n", error.what());
    return mgpr::kExitUsage;
  }
}
