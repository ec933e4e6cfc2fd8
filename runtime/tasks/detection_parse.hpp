#pragma once
// The detection output contracts of docs/models.md, read into boxes in tile pixels:
// a tensor [B, N, 6] (x1, y1, x2, y2, score, label; rows with score < 0 are padding),
// a list of B dicts with `boxes` [N, 4], `scores` [N] and `labels` [N] (torchvision's
// convention), or torchvision's scripted (losses, detections) tuple.
#include <torch/script.h>

#include <string>
#include <vector>

#include "geometry/box_merge.hpp"

namespace mgpr::runtime {

// One vector of boxes per tile of the batch (Box::tile left unset). Boxes scoring below
// `score_threshold` are dropped. Throws UsageError naming `model_name` and what it
// returned when the output follows none of the contracts. `returned`, when given, gets
// how many boxes the model returned for each tile, before any was dropped (padding rows
// of a tensor not counted): what its own cap limits.
std::vector<std::vector<Box>> parse_detections(const torch::IValue& output, std::int64_t batch, double score_threshold,
                                               const std::string& model_name,
                                               std::vector<std::int64_t>* returned = nullptr);

}  // namespace mgpr::runtime
