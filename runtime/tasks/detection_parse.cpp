#include "tasks/detection_parse.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include "mgpr/error.hpp"
#include "tasks/task_factories.hpp"

namespace mgpr::runtime {
namespace {

[[noreturn]] void refuse(const torch::IValue& output, std::int64_t batch, const std::string& model_name,
                         std::string_view detail) {
  throw UsageError(
      fmt::format("model '{}' returned {} for a batch of {} tiles{}; task=detect needs a [B, N, 6] "
                  "tensor (x1, y1, x2, y2, score, label) or a list of B dicts with boxes, scores and "
                  "labels; see docs/models.md",
                  model_name, describe_output(output), batch, detail));
}

void add_box(std::vector<Box>& boxes, double x1, double y1, double x2, double y2, double score, std::int64_t label,
             double score_threshold) {
  if (score < 0 || score < score_threshold || !(x2 > x1) || !(y2 > y1)) return;
  Box box;
  box.x1 = x1;
  box.y1 = y1;
  box.x2 = x2;
  box.y2 = y2;
  box.score = score;
  box.label = label;
  boxes.push_back(box);
}

std::vector<std::vector<Box>> from_tensor(const torch::Tensor& tensor, double score_threshold,
                                          std::vector<std::int64_t>* returned) {
  const auto rows = tensor.to(torch::kCPU, torch::kDouble).contiguous();
  const auto* values = rows.data_ptr<double>();
  std::vector<std::vector<Box>> tiles(static_cast<std::size_t>(rows.size(0)));
  if (returned != nullptr) returned->assign(tiles.size(), 0);
  const auto per_tile = rows.size(1);
  for (std::int64_t b = 0; b < rows.size(0); ++b) {
    for (std::int64_t n = 0; n < per_tile; ++n) {
      const double* row = values + (b * per_tile + n) * 6;
      if (returned != nullptr && row[4] >= 0) ++(*returned)[static_cast<std::size_t>(b)];
      add_box(tiles[static_cast<std::size_t>(b)], row[0], row[1], row[2], row[3], row[4],
              static_cast<std::int64_t>(std::llround(row[5])), score_threshold);
    }
  }
  return tiles;
}

std::vector<Box> from_dict(const c10::Dict<c10::IValue, c10::IValue>& dict, double score_threshold,
                           std::vector<std::int64_t>* returned) {
  const auto field = [&](const char* key) -> torch::Tensor {
    const auto found = dict.find(c10::IValue(std::string(key)));
    if (found == dict.end() || !found->value().isTensor()) {
      throw UsageError(fmt::format("a detection dict has no tensor '{}'", key));
    }
    return found->value().toTensor().to(torch::kCPU, torch::kDouble).contiguous();
  };
  const auto boxes = field("boxes");
  const auto scores = field("scores");
  const auto labels = field("labels");
  const auto count = scores.numel();
  if (boxes.dim() != 2 || boxes.size(0) != count || boxes.size(1) != 4 || labels.numel() != count) {
    throw UsageError(
        fmt::format("a detection dict has boxes of shape [{}], {} scores and {} labels; boxes must be "
                    "[N, 4] with N scores and N labels",
                    fmt::join(boxes.sizes(), ", "), count, labels.numel()));
  }
  if (returned != nullptr) returned->push_back(count);
  std::vector<Box> out;
  const auto* b = boxes.data_ptr<double>();
  for (std::int64_t i = 0; i < count; ++i) {
    add_box(out, b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3], scores.data_ptr<double>()[i],
            static_cast<std::int64_t>(std::llround(labels.data_ptr<double>()[i])), score_threshold);
  }
  return out;
}

}  // namespace

std::vector<std::vector<Box>> parse_detections(const torch::IValue& output, std::int64_t batch, double score_threshold,
                                               const std::string& model_name, std::vector<std::int64_t>* returned) {
  if (output.isTensor()) {
    const auto& tensor = output.toTensor();
    if (tensor.dim() != 3 || tensor.size(0) != batch || tensor.size(2) != 6) refuse(output, batch, model_name, "");
    return from_tensor(tensor, score_threshold, returned);
  }
  // torchvision's scripted detectors return (losses, detections).
  if (output.isTuple() && output.toTupleRef().elements().size() == 2 && output.toTupleRef().elements()[1].isList()) {
    return parse_detections(output.toTupleRef().elements()[1], batch, score_threshold, model_name, returned);
  }
  if (!output.isList()) refuse(output, batch, model_name, "");
  const auto list = output.toListRef();
  if (static_cast<std::int64_t>(list.size()) != batch) refuse(output, batch, model_name, "");
  std::vector<std::vector<Box>> tiles;
  if (returned != nullptr) returned->clear();
  for (const auto& item : list) {
    if (!item.isGenericDict()) refuse(output, batch, model_name, " (its items are not dicts)");
    try {
      tiles.push_back(from_dict(item.toGenericDict(), score_threshold, returned));
    } catch (const UsageError& error) {
      refuse(output, batch, model_name, fmt::format(" ({})", error.what()));
    }
  }
  return tiles;
}

}  // namespace mgpr::runtime
