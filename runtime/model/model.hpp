#pragma once
// The model: a TorchScript file (torch::jit::load) or a built-in one, placed on the
// rank's device in the run's precision (autocast on a GPU, and for bf16 on a CPU with
// LibTorch 2.x; else a cast model), checked once on a dummy tile so a model that
// expects another input shape is reported before any tile is read.
#include <torch/script.h>

#include <string>
#include <vector>

#include "mgpr/config.hpp"

namespace mgpr::runtime {

struct DeviceChoice {
  torch::Device device{torch::kCPU};
  bool is_cuda = false;
  std::string name;  // "cpu" or the GPU's name
};

// CUDA when the build and the machine have it and accelerator allows (the rank's one
// visible GPU, or local_rank modulo the visible ones), else CPU. accelerator=gpu with no
// GPU is a UsageError with the fix.
DeviceChoice choose_device(const RunConfig& config, int local_rank);

// The precision a run uses: precision= as given, or what precision=auto chose and why.
struct PrecisionChoice {
  std::string name;  // fp32, fp16, bf16
  bool automatic = false;
  std::string why;   // for the banner; empty unless automatic
};

class TileModel {
 public:
  // Throws UsageError naming the model and what is wrong (missing, not TorchScript,
  // wrong input shape, a precision the device cannot run).
  TileModel(const RunConfig& config, const DeviceChoice& device, int channels);

  // Runs one batch [B, C, H, W] (float32, any device) under InferenceMode; the output
  // stays on the model's device.
  torch::IValue forward(const torch::Tensor& batch);

  // The model's output for the dummy tile (one zero tile), for the task's contract check.
  [[nodiscard]] const torch::IValue& dummy_output() const { return dummy_output_; }
  // The dtype forward() gives the model: fp32 under autocast, else the run's precision.
  [[nodiscard]] torch::ScalarType input_dtype() const { return autocast_ ? torch::kFloat : dtype_; }
  // Whether reduced precision runs through autocast rather than a cast model.
  [[nodiscard]] bool uses_autocast() const { return autocast_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  // Things the user should know (a slow precision forced, an optimisation skipped).
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  void prepare(const RunConfig& config, const DeviceChoice& device, int channels, const PrecisionChoice& precision);

  torch::jit::Module module_;
  torch::Device device_;
  torch::ScalarType dtype_ = torch::kFloat;
  bool autocast_ = false;
  bool channels_last_ = false;
  std::string description_;
  std::vector<std::string> warnings_;
  torch::IValue dummy_output_;
};

}  // namespace mgpr::runtime
