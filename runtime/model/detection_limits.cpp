#include "model/detection_limits.hpp"

#include <fmt/format.h>

#include "model/model.hpp"

namespace mgpr::runtime {
namespace {

// A whole-number attribute `name` of `module`, if it has one.
std::optional<std::int64_t> int_attribute(const torch::jit::Module& module, const char* name) {
  if (!module.hasattr(name)) return std::nullopt;
  const auto value = module.attr(name);
  if (!value.isInt()) return std::nullopt;
  return value.toInt();
}

}  // namespace

DetectionLimits detection_limits(const torch::jit::Module& module) {
  DetectionLimits limits;
  for (const auto& item : module.named_modules()) {
    if (!limits.detections_per_img) limits.detections_per_img = int_attribute(item.value, "detections_per_img");
    if (!limits.topk_candidates) limits.topk_candidates = int_attribute(item.value, "topk_candidates");
  }
  return limits;
}

FileDetectionLimits detection_limits_of_file(const std::filesystem::path& model) {
  try {
    return {detection_limits(torch::jit::load(model.string(), torch::kCPU)), {}};
  } catch (const c10::Error& error) {
    return {{}, torch_error_line(error.what_without_backtrace())};
  } catch (const std::exception& error) {
    return {{}, torch_error_line(error.what())};
  }
}

std::string describe_detection_limits(const std::filesystem::path& model) {
  const auto read = detection_limits_of_file(model);
  if (!read.load_error.empty()) {
    return fmt::format("the model's own limits: not read, it does not load here alone ({}); a run reads them\n",
                       read.load_error);
  }
  std::string text;
  if (read.limits.detections_per_img) {
    text += fmt::format(
        "the model's own detections_per_img: {} (the most boxes a tile; tiles that reach it are counted and named)\n",
        *read.limits.detections_per_img);
  }
  if (read.limits.topk_candidates) {
    text += fmt::format("the model's own topk_candidates: {}\n", *read.limits.topk_candidates);
  }
  return text;
}

}  // namespace mgpr::runtime
