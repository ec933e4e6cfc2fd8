#pragma once
// One batch's output put together from the outputs of the forward passes that ran its
// tiles in turn (a CPU runs a batch as several passes: model/execution_policy.hpp). Every
// output the tasks accept is per tile along its first axis (docs/models.md): a tensor
// [B, ...], a list of B entries, and tuples and dicts of those (torchvision's scripted
// detectors return (losses, detections), the losses an empty dict in eval mode).
#include <torch/script.h>

#include <cstdint>
#include <optional>
#include <span>

namespace mgpr::runtime {

// The passes' outputs, in tile order, joined along the tile axis; `tiles[i]` is how many
// tiles pass i ran. Empty when an output does not split by tile (a tensor or list whose
// first axis is not the pass's tile count, passes whose structures differ, a value that
// is neither a tensor nor a container of them): the batch must then run as one pass.
std::optional<torch::IValue> join_tile_outputs(std::span<const torch::IValue> parts,
                                               std::span<const std::int64_t> tiles);

}  // namespace mgpr::runtime
