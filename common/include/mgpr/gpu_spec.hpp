#pragma once
// GPUs per node as users write them on the command line: "a100:2", "2", "h100:4".
#include <string>
#include <string_view>

namespace mgpr {

struct GpuSpec {
  std::string type;  // empty when the user did not name one
  int count = 0;     // GPUs per node, >= 1

  // The --gres / --gpus-per-node value Slurm expects: "a100:2" or "2".
  [[nodiscard]] std::string to_slurm() const;
};

// Throws UsageError naming the text and the expected grammar.
GpuSpec parse_gpu_spec(std::string_view text);

}  // namespace mgpr
