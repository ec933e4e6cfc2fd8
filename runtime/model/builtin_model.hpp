#pragma once
// Models that ship inside mgpr, so the original project's environment check
// (`mgpr use_fake_data=true`) runs with no model file at hand.
#include <torch/script.h>

#include <string_view>

namespace mgpr::runtime {

// True for "builtin:..." model specs.
bool is_builtin_model(std::string_view spec);

// A TorchScript ResNet-50 (torchvision's layout, batch norm folded into the convolutions
// as inference does anyway) with deterministic random weights: the same cost per tile as
// the real network, for checks and benchmarks. Throws UsageError for an unknown name.
torch::jit::Module make_builtin_model(std::string_view spec, int in_channels);

}  // namespace mgpr::runtime
