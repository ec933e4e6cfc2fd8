#include "model/model.hpp"

#include <ATen/Context.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "mgpr/error.hpp"
#include "model/autocast_scope.hpp"
#include "model/builtin_model.hpp"
#include "model/device_memory.hpp"
#include "model/onednn_fusion.hpp"
#include "model/tile_outputs.hpp"

namespace mgpr::runtime {
namespace {

torch::ScalarType precision_dtype(Precision precision) {
  if (precision == Precision::kFp16) return torch::kHalf;
  if (precision == Precision::kBf16) return torch::kBFloat16;
  return torch::kFloat;
}

// Custom operators (torchvision::nms, ...) register themselves when their library is
// loaded; a scripted model that calls them cannot be loaded before. RTLD_GLOBAL so the
// libraries' own symbols resolve each other. Never unloaded: the operators stay registered.
void load_operator_libraries(const std::vector<std::string>& libraries) {
  for (const auto& library : libraries) {
    if (::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* reason = ::dlerror();
      throw UsageError(
          fmt::format("model_libraries: cannot load '{}': {}; give the full path of a shared library "
                      "built for this LibTorch (e.g. torchvision's _C.so)",
                      library, reason != nullptr ? reason : "unknown error"));
    }
  }
}

// What to try, from the words of the failure: the shape hint only where the shape is
// what the model complains of (a model error was once always "check tile_size and bands").
std::string hint_for_model_failure(std::string_view cause, std::string_view precision) {
  const auto says = [&](std::string_view word) { return cause.find(word) != std::string_view::npos; };
  if (says("not implemented for") || says("BFloat16") || says("Half") || says("dtype")) {
    return fmt::format(
        "the model has no kernel for this number type: run it at precision=fp32 (it ran at precision={})", precision);
  }
  if (says("channels") || says("size") || says("shape") || says("dimension") || says("expected input")) {
    return "check tile_size and bands against the input the model expects";
  }
  return "that is the model's own error, not one of mgpr's inputs; run the model on a tensor of this shape in "
         "Python to see where it fails";
}

// The compiler reports an operator no loaded library registers as "Unknown builtin op:
// ns::name." followed by a script traceback; the namespace says which library to name.
std::string load_failure_message(const std::string& spec, const std::string& what) {
  constexpr std::string_view marker = "Unknown builtin op: ";
  if (const auto at = what.find(marker); at != std::string::npos) {
    const auto name_at = at + marker.size();
    std::string op = what.substr(name_at, what.find_first_of(" \n", name_at) - name_at);
    if (op.ends_with('.')) op.pop_back();
    const std::string library = op.substr(0, op.find("::"));
    const std::string example = library == "torchvision"
                                    ? " (for torchvision: _C.so in the folder that python3 -c 'import torchvision, os; "
                                      "print(os.path.dirname(torchvision.__file__))' prints)"
                                    : "";
    return fmt::format(
        "model '{}' calls the operator {}, which no loaded library registers; add model_libraries=<path of the "
        "shared library that registers {}::>{}, built for this LibTorch",
        spec, op, library, example);
  }
  return fmt::format("model '{}' cannot be loaded as TorchScript: {}; save it with torch.jit.script(model).save(path)",
                     spec, torch_error_line(what));
}

torch::jit::Module load_script(const std::string& spec, int channels) {
  if (is_builtin_model(spec)) return make_builtin_model(spec, channels);
  std::error_code error;
  if (!std::filesystem::is_regular_file(spec, error)) {
    throw UsageError(
        fmt::format("model '{}' does not exist or is not a file; give a TorchScript file "
                    "(torch.jit.script(model).save(path)) or model=builtin:resnet50",
                    spec));
  }
  try {
    return torch::jit::load(spec, torch::kCPU);
  } catch (const c10::Error& failure) {
    throw UsageError(
        fmt::format("model '{}' cannot be loaded as TorchScript: {}; save it with "
                    "torch.jit.script(model).save(path) (not torch.save, and not a frozen module)",
                    spec, torch_error_line(failure.what_without_backtrace())));
  } catch (const std::exception& failure) {
    // The script compiler's own errors (an operator nobody registered) are not c10::Errors.
    throw UsageError(load_failure_message(spec, failure.what()));
  }
}

// Convolution weights in NHWC: cuDNN's tensor-core kernels read that layout natively, and
// NCHW weights would make it transpose on every call. Other parameters keep their layout.
void weights_to_channels_last(torch::jit::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto parameter : module.parameters()) {
    if (parameter.dim() == 4) parameter.set_data(parameter.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

// The bands the model's first convolution takes: the second dimension of its first 4-D
// weight, in the order the module registered its parameters; nullopt for a model with none.
std::optional<std::int64_t> first_layer_bands(const torch::jit::Module& module) {
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (parameter.value.dim() == 4 && parameter.name.ends_with("weight")) return parameter.value.size(1);
  }
  return std::nullopt;
}

// The banner's words for an executor jit_executor= named.
std::string_view executor_words(JitExecutor executor) {
  switch (executor) {
    case JitExecutor::kSimple:
      return "simple executor";
    case JitExecutor::kProfiling:
      return "profiling executor";
    case JitExecutor::kProfilingNoFuser:
      return "profiling executor without TensorExpr fusion";
    case JitExecutor::kAuto:  // resolved by the policy, never in a plan
      break;
  }
  return name_of(executor);
}

std::string band_count_mismatch(const ModelOptions& options, int channels, std::int64_t takes) {
  if (!options.card_bands.empty() && static_cast<int>(options.card_bands.size()) == channels) {
    return fmt::format(
        "{} says bands=[{}] ({} bands), but the model '{}' takes {} bands in its first layer; the card contradicts "
        "the model: fix the card's bands, or override them with bands=[...] ({} numbers)",
        options.card_name, fmt::join(options.card_bands, ","), channels, options.model, takes, takes);
  }
  return fmt::format(
      "model '{}' takes {} bands in its first layer but {} are selected; choose {} with bands=[...] (1-based band "
      "numbers of the raster)",
      options.model, takes, channels, takes);
}

}  // namespace

std::string torch_error_line(const std::string& text) {
  std::string_view essential = text;
  for (const std::string_view marker : {"RuntimeError: ", "Error: "}) {
    if (const auto at = essential.rfind(marker); at != std::string_view::npos) {
      essential = essential.substr(at + marker.size());
      break;
    }
  }
  // TorchScript's compile errors begin with a newline.
  essential.remove_prefix(std::min(essential.find_first_not_of("\n "), essential.size()));
  return std::string(essential.substr(0, essential.find('\n')));
}

DeviceChoice choose_device(Accelerator accelerator, int local_rank) {
  const bool has_cuda = torch::cuda::is_available();
  if (accelerator == Accelerator::kGpu && !has_cuda) {
    throw UsageError(
        "accelerator=gpu but no GPU is visible to this rank (check the job's --gpus and "
        "CUDA_VISIBLE_DEVICES), or run on CPU with accelerator=cpu");
  }
  DeviceChoice choice;
  if (has_cuda && accelerator != Accelerator::kCpu) {
    const auto visible = static_cast<int>(torch::cuda::device_count());
    choice.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % visible));
    choice.is_cuda = true;
    choice.name = fmt::format("cuda:{}", choice.device.index());
  } else {
    choice.name = "cpu";
  }
  return choice;
}

ExecutionFacts execution_facts(const DeviceChoice& device) {
  ExecutionFacts facts;
  facts.is_cuda = device.is_cuda;
  facts.torch_major = TORCH_VERSION_MAJOR;
  if (device.is_cuda) {
    facts.compute_capability = compute_capability(device);
    facts.device_product_name = device_product_name(device);
  } else {
    facts.native_bf16_flag = native_bf16_flag();
  }
  return facts;
}

TileModel::TileModel(const ModelOptions& options, const DeviceChoice& device, int channels,
                     std::span<const ExecutionPlan> plans)
    : device_(device.device) {
  load_operator_libraries(options.libraries);
  std::string first_failure;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    try {
      prepare(options, device, channels, plans[i]);
      if (i > 0) {
        warnings_.insert(warnings_.begin(), fmt::format("precision={} runs the model in {}: in {} it fails ({})",
                                                        name_of(Precision::kAuto), precision_name(plans[i]),
                                                        precision_name(plans[0]), first_failure));
      }
      return;
    } catch (const UsageError& failure) {
      if (i + 1 == plans.size()) throw;
      if (i == 0) first_failure = torch_error_line(failure.what());
    }
  }
  throw std::logic_error("TileModel: no execution plan given");
}

void TileModel::prepare(const ModelOptions& options, const DeviceChoice& device, int channels,
                        const ExecutionPlan& plan) {
  dtype_ = precision_dtype(plan.precision);
  autocast_ = plan.autocast;
  channels_last_ = plan.channels_last;
  forward_tiles_ = plan.forward_tiles;
  // The plan gives the fuser to CPU graphs only; registering it is this LibTorch's part.
  onednn_fusion_ = plan.onednn_fusion && enable_onednn_fusion();
  jit_executor_ = plan.jit_executor;
  warnings_ = plan.warnings;

  module_ = load_script(options.model, channels);
  // Before freezing, which folds the weights into constants.
  const auto first_layer_takes = first_layer_bands(module_);
  detection_limits_ = runtime::detection_limits(module_);
  module_.eval();
  module_.to(device_);
  // Autocast keeps the weights fp32 and picks each operator's precision; without it
  // (fp16 on a CPU, or LibTorch 1.x) the model is cast as a whole.
  if (dtype_ != torch::kFloat && !autocast_) module_.to(dtype_);
  // A process-wide switch: a rank runs one model.
  if (device.is_cuda) at::globalContext().setBenchmarkCuDNN(plan.cudnn_benchmark);
  // Also process-wide. Set both ways under the profiling executor, so a model made after
  // another in one process gets its own; the simple executor never reaches the fuser,
  // and a pass under oneDNN Graph keeps LibTorch's setting as before.
  if (jit_executor_ != JitExecutor::kSimple) {
    torch::jit::setTensorExprFuserEnabled(jit_executor_ == JitExecutor::kProfiling);
  }
  if (channels_last_) weights_to_channels_last(module_);
  std::string optimisation;
  if (plan.optimisation != GraphOptimisation::kNone) {
    // Some scripted models (custom operators, data-dependent control flow) refuse either;
    // they still run as scripted.
    const bool freeze = plan.optimisation == GraphOptimisation::kFreeze;
    try {
      module_ = freeze ? torch::jit::freeze(module_) : torch::jit::optimize_for_inference(module_);
      optimisation = freeze ? "frozen" : "optimised for inference";
    } catch (const c10::Error& failure) {
      warnings_.push_back(fmt::format("model '{}' runs without {}: {}", options.model,
                                      freeze ? "freezing" : "optimize_for_inference",
                                      torch_error_line(failure.what_without_backtrace())));
    }
  }
  const auto precision = precision_name(plan);
  description_ = fmt::format(
      "{} on {} in {}{}{}{}{}{}{}{}", options.model, device.name, precision,
      plan.why.empty() ? "" : fmt::format(" ({})", plan.why), autocast_ ? ", autocast" : "",
      channels_last_ ? ", channels-last" : "", optimisation.empty() ? "" : ", " + optimisation,
      onednn_fusion_ ? ", oneDNN Graph fusion" : "",
      forward_tiles_ > 0 ? fmt::format(", {} tile{} a pass", forward_tiles_, forward_tiles_ == 1 ? "" : "s") : "",
      plan.jit_executor_asked ? fmt::format(", {}", executor_words(jit_executor_)) : "");

  // One dummy tile: a model that wants another shape fails here, by name, not mid-run.
  try {
    dummy_output_ = forward(torch::zeros({1, channels, options.tile_size, options.tile_size}));
  } catch (const std::exception& failure) {
    const auto cause = torch_error_line(failure.what());
    if (first_layer_takes && *first_layer_takes != channels) {
      throw UsageError(band_count_mismatch(options, channels, *first_layer_takes));
    }
    throw UsageError(fmt::format(
        "model '{}' fails on a tile of shape [1, {}, {}, {}] (batch, bands, height, width): {}; {}", options.model,
        channels, options.tile_size, options.tile_size, cause, hint_for_model_failure(cause, precision)));
  }
}

torch::IValue TileModel::forward(const torch::Tensor& batch) {
  return forward(batch.size(0),
                 [&batch](std::int64_t first, std::int64_t count) { return batch.narrow(0, first, count); });
}

torch::IValue TileModel::forward(std::int64_t tiles, const BatchRows& rows) {
  auto output = forward_passes(tiles, rows);
  if (!output_reduction_) return output;
  const c10::InferenceMode inference;
  return output_reduction_(output);
}

torch::IValue TileModel::forward_passes(std::int64_t tiles, const BatchRows& rows) {
  if (forward_tiles_ <= 0 || tiles <= forward_tiles_) return forward_pass(rows(0, tiles));
  std::vector<torch::IValue> outputs;
  std::vector<std::int64_t> pass_tiles;
  for (std::int64_t first = 0; first < tiles; first += forward_tiles_) {
    pass_tiles.push_back(std::min(forward_tiles_, tiles - first));
    outputs.push_back(forward_pass(rows(first, pass_tiles.back())));
  }
  c10::InferenceMode inference;
  if (auto joined = join_tile_outputs(outputs, pass_tiles)) return std::move(*joined);
  // Outside the tasks' contracts (docs/models.md), but the batch whole may still be
  // something a task reads: let it say.
  outputs.clear();
  forward_tiles_ = 0;
  return forward_pass(rows(0, tiles));
}

torch::IValue TileModel::forward_pass(const torch::Tensor& batch) {
  if (onednn_fusion_) {
    try {
      return run_pass(batch);
    } catch (const std::exception& failure) {
      // The fuser compiles on a shape's second call, so a model it cannot take fails on
      // a batch, not at the one-tile check; LibTorch 2.7's fails with
      // std::bad_optional_access. Nothing of the pass was kept: it runs again, unfused.
      onednn_fusion_ = false;
      std::cerr << fmt::format(
          "mgpr: the model failed under oneDNN Graph fusion ({}); it runs unfused from here on "
          "(onednn_fusion=false skips the attempt)\n",
          torch_error_line(failure.what()));
    }
  }
  return run_pass(batch);
}

torch::IValue TileModel::run_pass(const torch::Tensor& batch) {
  c10::InferenceMode inference;
  // The simple executor is the graph optimiser switched off, per thread, for this pass
  // (why it is jit_executor=auto's choice: model/execution_policy.cpp). oneDNN Graph's
  // fuser is one of the profiling executor's passes, so a fused pass keeps that executor.
  std::optional<torch::jit::GraphOptimizerEnabledGuard> plain_executor;
  if (jit_executor_ == JitExecutor::kSimple && !onednn_fusion_) plain_executor.emplace(false);
  auto input = batch.to(device_, input_dtype(), /*non_blocking=*/true);
  if (channels_last_) input = input.contiguous(at::MemoryFormat::ChannelsLast);
  if (!autocast_) return module_.forward({std::move(input)});
  const AutocastScope mixed_precision(device_.type(), dtype_);
  return module_.forward({std::move(input)});
}

}  // namespace mgpr::runtime
