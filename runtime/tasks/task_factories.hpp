#pragma once
// The three tasks' outputs (docs/outputs.md), one file each.
#include <memory>

#include "geometry/georef.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

std::unique_ptr<TaskOutput> make_classify_output(const OutputPlan& plan);
std::unique_ptr<TaskOutput> make_detect_output(const OutputPlan& plan, std::unique_ptr<CropClassifier> crop_classifier);
std::unique_ptr<TaskOutput> make_segment_output(const OutputPlan& plan);

// task=segment's reduction of [B, C, H, W] class scores to a class per pixel, on the
// scores' device: a tuple of the classes (uint8 [B, H, W]) and, with `with_probability`,
// the winning class's probability (float32 [B, H, W]; else None). C = 1 is one logit:
// class 1 where it is above 0, its probability the sigmoid's side.
torch::IValue segment_pixels(const torch::Tensor& scores, bool with_probability);

// What a model returned, for error messages: "a tensor of shape [2, 5]", "a list of 2 GenericDict".
std::string describe_output(const torch::IValue& output);
// The name of `label` in `class_names` (index = label value); empty for a label outside
// the list, so a model with more classes than names still writes every row.
std::string class_name(const std::vector<std::string>& class_names, std::int64_t label);
// The raster's georeferencing as a GeoTransform (identity when it has none).
GeoTransform raster_transform(const RasterDescription& raster);

}  // namespace mgpr::runtime
