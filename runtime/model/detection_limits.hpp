#pragma once
// A detector's own limits, as torchvision's detectors keep them: the most boxes it
// returns for an image (`detections_per_img`, 300 by default) and the candidates each
// feature level keeps before the merge (`topk_candidates`, RetinaNet and FCOS). Dense
// scenes (bird colonies, orchards) reach the first and lose objects silently; the run
// counts the tiles that do (tasks/detect.cpp). Scripted detectors keep both as
// attributes: on the model (RetinaNet, FCOS), on `roi_heads` (Faster and Mask R-CNN), or
// on a submodule of a wrapper that holds the detector.
#include <torch/script.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace mgpr::runtime {

struct DetectionLimits {
  std::optional<std::int64_t> detections_per_img;
  std::optional<std::int64_t> topk_candidates;
};

// The first of each attribute found in `module` and its submodules, in the module's own
// order (itself first). Read before freezing, which folds attributes into constants.
DetectionLimits detection_limits(const torch::jit::Module& module);

// The limits of the TorchScript file `model` loaded on the CPU (mgpr --model-info), or
// the first line of why it does not load (a detector whose operators library is not
// loaded: a run names it in model_libraries).
struct FileDetectionLimits {
  DetectionLimits limits;
  std::string load_error;  // empty when it loaded (never empty when it did not)
};
FileDetectionLimits detection_limits_of_file(const std::filesystem::path& model);
// What mgpr --model-info prints of them: a line for each the model keeps, or why they
// were not read.
std::string describe_detection_limits(const std::filesystem::path& model);

}  // namespace mgpr::runtime
