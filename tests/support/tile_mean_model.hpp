#pragma once
// A TorchScript classifier the tests save themselves (no Python, nothing downloaded):
// its two logits per tile are the tile's mean and its negation, so the expected output
// is known exactly for any input.
#include <torch/script.h>

#include <filesystem>

namespace mgpr::test {

inline torch::jit::Module tile_mean_module() {
  torch::jit::Module module("TileMean");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(R"(
def forward(self, x):
    m = torch.mean(x, [1, 2, 3])
    return torch.stack([m, -m], 1)
)");
  return module;
}

inline std::filesystem::path save_tile_mean_model(const std::filesystem::path& dir) {
  const auto file = dir / "mean.pt";
  tile_mean_module().save(file.string());
  return file;
}

}  // namespace mgpr::test
