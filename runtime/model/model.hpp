#pragma once
// The model: a TorchScript file (torch::jit::load) or a built-in one, placed on the
// rank's device and run as the run plan's execution plan says (model/execution_policy.hpp:
// precision, autocast, layout, optimisation), checked once on a dummy tile so a model
// that expects another input shape is reported before any tile is read.
#include <torch/script.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mgpr/run_choices.hpp"
#include "model/detection_limits.hpp"
#include "model/execution_policy.hpp"

namespace mgpr::runtime {

struct DeviceChoice {
  torch::Device device{torch::kCPU};
  bool is_cuda = false;
  std::string name;  // "cpu" or the GPU's name
};

// CUDA when the build and the machine have it and accelerator allows (the rank's one
// visible GPU, or local_rank modulo the visible ones), else CPU. accelerator=gpu with no
// GPU is a UsageError with the fix.
DeviceChoice choose_device(Accelerator accelerator, int local_rank);

// What the execution policy needs to know of `device` and this build.
ExecutionFacts execution_facts(const DeviceChoice& device);

// The line of a LibTorch message that matters: its C++ backtrace after the first line and
// the TorchScript interpreter's script traceback before it ("RuntimeError: ...") left out.
std::string torch_error_line(const std::string& text);

// The model stage's own options.
struct ModelOptions {
  std::string model = "builtin:resnet50";  // a TorchScript file, or builtin:resnet50
  std::vector<std::string> libraries;      // custom operators' shared libraries, loaded first
  int tile_size = 1024;                    // the one-tile check's side
  // The model card's settings the model must agree with, and how to name the card in
  // messages ("the model card in model.pt"); empty: no card.
  std::string card_name{};
  std::vector<int> card_bands{};  // bands= as the card gives them; empty: the card has none
};

class TileModel {
 public:
  // Loads the model and runs the first of `plans` (model/execution_policy.hpp) that
  // passes the one-tile check; a later plan is the fallback of an earlier one, and its
  // use is one of warnings(). Throws UsageError naming the model and what is wrong
  // (missing, not TorchScript, wrong input shape).
  TileModel(const ModelOptions& options, const DeviceChoice& device, int channels,
            std::span<const ExecutionPlan> plans);

  // Runs one batch [B, C, H, W] (float32, any device) under InferenceMode; the output
  // stays on the model's device. On a CPU the batch runs as passes of the plan's
  // forward_tiles, their outputs joined (model/tile_outputs.hpp); a model whose output
  // does not split by tile runs its batches whole from then on, and one that oneDNN
  // Graph's fuser fails on runs unfused from then on (the failed pass again, unfused).
  torch::IValue forward(const torch::Tensor& batch);

  // Rows [first, first + count) of a batch, [count, C, H, W] float32, made when a pass
  // asks for them.
  using BatchRows = std::function<torch::Tensor(std::int64_t first, std::int64_t count)>;
  // forward() of a batch of `tiles` tiles that `rows` gives pass by pass, so that a whole
  // float32 batch need not exist at once (raw tiles scaled a pass at a time on a CPU).
  torch::IValue forward(std::int64_t tiles, const BatchRows& rows);

  // What the task keeps of each batch's output, computed where the output is: forward()
  // returns the reduction of the batch's output (its passes' joined), under
  // InferenceMode, so that on a GPU only that is copied back to the host. Unset (the
  // default): the output whole. The dummy tile's output, made before, stays whole for the
  // task's contract check.
  using OutputReduction = std::function<torch::IValue(const torch::IValue&)>;
  void set_output_reduction(OutputReduction reduction) { output_reduction_ = std::move(reduction); }

  // The model's output for the dummy tile (one zero tile), for the task's contract check.
  [[nodiscard]] const torch::IValue& dummy_output() const { return dummy_output_; }
  // The dtype forward() gives the model: fp32 under autocast, else the run's precision.
  [[nodiscard]] torch::ScalarType input_dtype() const { return autocast_ ? torch::kFloat : dtype_; }
  // Whether reduced precision runs through autocast rather than a cast model.
  [[nodiscard]] bool uses_autocast() const { return autocast_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  // Whether the next pass runs under oneDNN Graph's fuser: false from the first pass that
  // failed under it on.
  [[nodiscard]] bool fused() const { return onednn_fusion_; }
  // A detector's own limits, read from the module as loaded (model/detection_limits.hpp);
  // empty for the built-in model and for models that keep none.
  [[nodiscard]] const DetectionLimits& detection_limits() const { return detection_limits_; }
  // Things the user should know (a slow precision forced, an optimisation skipped).
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  void prepare(const ModelOptions& options, const DeviceChoice& device, int channels, const ExecutionPlan& plan);
  torch::IValue forward_passes(std::int64_t tiles, const BatchRows& rows);
  torch::IValue forward_pass(const torch::Tensor& tiles);
  torch::IValue run_pass(const torch::Tensor& tiles);

  torch::jit::Module module_;
  torch::Device device_;
  torch::ScalarType dtype_ = torch::kFloat;
  bool autocast_ = false;
  bool channels_last_ = false;
  std::int64_t forward_tiles_ = 0;                   // 0: a batch is one pass
  bool onednn_fusion_ = false;                       // CPU: under the profiling executor with oneDNN Graph's pass
  JitExecutor jit_executor_ = JitExecutor::kSimple;  // unfused passes' executor
  std::string description_;
  DetectionLimits detection_limits_;
  std::vector<std::string> warnings_;
  torch::IValue dummy_output_;
  OutputReduction output_reduction_;
};

}  // namespace mgpr::runtime
