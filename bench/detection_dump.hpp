#pragma once
// mgpr-bench-pipeline --boxes FILE: every tile's detections, as the detect task parses
// them (tile pixels, scores above score_threshold), one CSV row a box. bench/gpu-check
// compares a GPU run's boxes with a CPU fp32 run's on the same fake tiles; the tiles of
// a fake source all have one window, so the task's merge across tiles cannot be used.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "pipeline/pipeline.hpp"
#include "tasks/detection_parse.hpp"

namespace mgpr::bench {

class DetectionDump final : public runtime::BatchConsumer {
 public:
  DetectionDump(const std::string& path, double score_threshold, std::string model)
      : file_(std::fopen(path.c_str(), "w"), &std::fclose),
        score_threshold_(score_threshold),
        model_(std::move(model)) {
    if (!file_) throw std::runtime_error(fmt::format("--boxes {}: cannot be written", path));
    fmt::print(file_.get(), "tile,x1,y1,x2,y2,score,label\n");
  }

  void consume(std::span<const runtime::TileData> tiles, const torch::IValue& output) override {
    const auto boxes =
        runtime::parse_detections(output, static_cast<std::int64_t>(tiles.size()), score_threshold_, model_);
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      for (const auto& box : boxes[i]) {
        fmt::print(file_.get(), "{},{:.3f},{:.3f},{:.3f},{:.3f},{:.5f},{}\n", tiles[i].tile.id.row, box.x1, box.y1,
                   box.x2, box.y2, box.score, box.label);
      }
    }
  }

 private:
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file_;
  double score_threshold_;
  std::string model_;
};

}  // namespace mgpr::bench
