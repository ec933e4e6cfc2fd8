// mgpr-test-model: saves one of the known-answer models (known_models.hpp) as a
// TorchScript file, for tests that run real mgpr processes (the Slurm tests).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "mgpr/cli.hpp"
#include "tools/known_models.hpp"

int main(int argc, char** argv) {
  using mgpr::test::DetectorStyle;
  const std::map<std::string, DetectorStyle> detectors = {{"detector", DetectorStyle::kTensor},
                                                          {"detector-dicts", DetectorStyle::kDicts},
                                                          {"detector-tuple", DetectorStyle::kTupleLossesDicts}};
  std::string kind;
  std::string output;
  double threshold = 0.99;
  int max_boxes = 64;
  int slow_rounds = 0;
  int grid = 16;
  CLI::App app{"Save a known-answer TorchScript model: bright (mean over bands > threshold) pixels are objects."};
  app.add_option("kind", kind,
                 "detector ([B,max_boxes,6] tensor), detector-dicts (torchvision's list of dicts), "
                 "detector-tuple ((losses, dicts)), segmenter ([B,2,H,W] logits), fixed-boxes (the same two "
                 "boxes for every tile), grid-boxes (--grid squared boxes tiling every tile), or tile-mean (a "
                 "classifier: logits mean and -mean of the tile's every "
                 "pixel, for task=classify), or last-band (a crop classifier: class 1 where the last band's mean "
                 "is above --threshold, else 0)")
      ->required()
      ->check(CLI::IsMember({"detector", "detector-dicts", "detector-tuple", "segmenter", "fixed-boxes", "grid-boxes",
                             "tile-mean", "last-band"}));
  app.add_option("output", output, "TorchScript file to write (OUT.pt)")->required();
  app.add_option("--threshold", threshold, "object where the band mean is above this (default 0.99)");
  app.add_option("--max-boxes", max_boxes, "boxes kept per image, detectors only (default 64)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--grid", grid, "grid-boxes: boxes per side of a tile (default 16)")->check(CLI::Range(1, 1024));
  int input_size = 0;
  app.add_option("--input-size", input_size, "last-band: refuse inputs of another side (default 0: any)")
      ->check(CLI::Range(0, 1 << 16));
  std::string card;
  app.add_option("--card", card, "a model card (JSON text) saved inside the file as mgpr.json");
  app.add_option("--slow", slow_rounds, "256x256 matrix products before each forward, to make runs last (default 0)")
      ->check(CLI::Range(0, 1 << 30));
  int hungry_mib = 0;
  app.add_option("--hungry", hungry_mib,
                 "MiB filled per tile before each forward, to outgrow a memory limit (default 0)")
      ->check(CLI::Range(0, 1 << 20));
  std::int64_t detections_per_img = 0;
  app.add_option("--detections-per-img", detections_per_img,
                 "detectors: keep N as the model's attribute detections_per_img, as torchvision's detectors keep "
                 "their cap (default: none)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  if (const auto code = mgpr::parse_command_line(app, argc, argv)) return *code;
  if (!std::isfinite(threshold)) {
    fmt::print(stderr, "mgpr-test-model: error: --threshold must be a finite number\n");
    return mgpr::kExitUsage;
  }

  auto model = kind == "tile-mean"     ? mgpr::test::tile_mean_classifier()
               : kind == "last-band"   ? mgpr::test::last_band_classifier(threshold, input_size)
               : kind == "segmenter"   ? mgpr::test::threshold_segmenter(threshold)
               : kind == "fixed-boxes" ? mgpr::test::fixed_boxes_detector()
               : kind == "grid-boxes"  ? mgpr::test::grid_boxes_detector(grid)
                                       : mgpr::test::threshold_detector(threshold, max_boxes, detectors.at(kind));
  if (detections_per_img > 0) {
    model.register_attribute("detections_per_img", c10::IntType::get(), detections_per_img);
  }
  if (slow_rounds > 0) model = mgpr::test::slow(model, slow_rounds);
  if (hungry_mib > 0) model = mgpr::test::hungry(model, hungry_mib);
  // Renamed when complete, so a test polling for the file never loads half of it.
  const std::string partial = output + ".partial";
  try {
    torch::jit::ExtraFilesMap extra;
    if (!card.empty()) extra.emplace("mgpr.json", card);
    model.save(partial, extra);
  } catch (const c10::Error& error) {
    fmt::print(stderr, "mgpr-test-model: error: cannot write '{}': {}\n", output, error.what_without_backtrace());
    std::remove(partial.c_str());
    return mgpr::kExitUsage;
  }
  if (std::rename(partial.c_str(), output.c_str()) != 0) {
    fmt::print(stderr, "mgpr-test-model: error: cannot rename '{}' to '{}'\n", partial, output);
    return mgpr::kExitUsage;
  }
  fmt::print("mgpr-test-model: wrote {} ({}{}{}{})\n", output, kind,
             slow_rounds > 0 ? fmt::format(", {} matmul rounds per forward", slow_rounds) : "",
             hungry_mib > 0 ? fmt::format(", {} MiB filled per tile", hungry_mib) : "",
             card.empty() ? "" : ", with a model card");
  return 0;
}
