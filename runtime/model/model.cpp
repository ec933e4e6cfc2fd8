#include "model/model.hpp"

#include <ATen/Context.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "mgpr/error.hpp"
#include "model/autocast_scope.hpp"
#include "model/builtin_model.hpp"
#include "model/device_memory.hpp"

namespace mgpr::runtime {
namespace {

// LibTorch's messages carry a C++ backtrace after the first line, and the TorchScript
// interpreter's a script traceback before the line that matters ("RuntimeError: ...").
std::string first_line(const std::string& text) {
  std::string_view essential = text;
  for (const std::string_view marker : {"RuntimeError: ", "Error: "}) {
    if (const auto at = essential.rfind(marker); at != std::string_view::npos) {
      essential = essential.substr(at + marker.size());
      break;
    }
  }
  return std::string(essential.substr(0, essential.find('\n')));
}

// Native bf16 arithmetic on x86 CPUs: the flag that says so ("amx_bf16", "avx512_bf16"),
// or empty where LibTorch would emulate bf16, measured 25x slower than fp32 on such a CPU.
std::string native_bf16_flag() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("flags")) continue;
    line += ' ';
    for (const char* flag : {"amx_bf16", "avx512_bf16"}) {
      if (line.find(fmt::format(" {} ", flag)) != std::string::npos) return flag;
    }
    return {};
  }
  return {};
}

// precision=auto: what users' Python does on the device, where it pays. On a CPU that
// computes bf16 natively, LibTorch 2.x's autocast ran ResNet-50 1.5x and the detectors
// 1.3-1.5x faster than fp32 here, end to end (docs/benchmarks.md; multigpu_raster forces
// bf16-mixed on CPUs); LibTorch 1.13's ran slower than fp32, and GPUs keep fp32
// (Lightning's default there).
PrecisionChoice resolve_precision(const std::string& precision, bool is_cuda) {
  if (precision != "auto") return {precision, false, {}};
  if (is_cuda) return {"fp32", true, "auto: fp32 on a GPU"};
#if TORCH_VERSION_MAJOR >= 2
  if (const auto flag = native_bf16_flag(); !flag.empty()) return {"bf16", true, fmt::format("auto: native {}", flag)};
  return {"fp32", true, "auto: this CPU has no native bf16"};
#else
  return {"fp32", true, "auto: LibTorch 1.x's CPU bf16 is slower than fp32"};
#endif
}

torch::ScalarType precision_dtype(const std::string& precision) {
  if (precision == "fp16") return torch::kHalf;
  if (precision == "bf16") return torch::kBFloat16;
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
                     spec, first_line(what));
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
                    spec, first_line(failure.what_without_backtrace())));
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

}  // namespace

DeviceChoice choose_device(const RunConfig& config, int local_rank) {
  const bool has_cuda = torch::cuda::is_available();
  if (config.accelerator == "gpu" && !has_cuda) {
    throw UsageError(
        "accelerator=gpu but no GPU is visible to this rank (check the job's --gpus and "
        "CUDA_VISIBLE_DEVICES), or run on CPU with accelerator=cpu");
  }
  DeviceChoice choice;
  if (has_cuda && config.accelerator != "cpu") {
    const auto visible = static_cast<int>(torch::cuda::device_count());
    choice.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % visible));
    choice.is_cuda = true;
    choice.name = fmt::format("cuda:{}", choice.device.index());
  } else {
    choice.name = "cpu";
  }
  return choice;
}

TileModel::TileModel(const RunConfig& config, const DeviceChoice& device, int channels) : device_(device.device) {
  load_operator_libraries(config.model_libraries);
  const auto choice = resolve_precision(config.precision, device.is_cuda);
  try {
    prepare(config, device, channels, choice);
  } catch (const UsageError& failure) {
    // precision=auto promised a run, not bf16: a model without bf16 kernels runs in fp32.
    if (!choice.automatic || choice.name == "fp32") throw;
    prepare(config, device, channels, {"fp32", true, "auto: the model fails in bf16"});
    warnings_.insert(warnings_.begin(), fmt::format("precision=auto runs the model in fp32: in bf16 it fails ({})",
                                                    first_line(failure.what())));
  }
}

void TileModel::prepare(const RunConfig& config, const DeviceChoice& device, int channels,
                        const PrecisionChoice& precision) {
  dtype_ = precision_dtype(precision.name);
  autocast_ = false;
  channels_last_ = false;
  warnings_.clear();
  if (device.is_cuda && dtype_ != torch::kFloat) {
    // bf16 needs Ampere (8.0) or newer; fp16 tensor cores exist since Volta (7.0).
    const int needed = dtype_ == torch::kBFloat16 ? 80 : 70;
    const int capability = compute_capability(device);
    if (capability < needed && !config.force_precision) {
      throw UsageError(
          fmt::format("precision={} on {} (compute capability {}.{}) is emulated or unsupported: it "
                      "needs {}.{} or newer; use precision=fp32{}, or force_precision=true to run it "
                      "anyway",
                      precision.name, device_product_name(device), capability / 10, capability % 10, needed / 10,
                      needed % 10, dtype_ == torch::kBFloat16 ? " or fp16" : ""));
    }
    autocast_ = true;
  }
  if (!device.is_cuda && dtype_ != torch::kFloat) {
    const bool slow = dtype_ == torch::kHalf || native_bf16_flag().empty();
    if (slow && !config.force_precision) {
      throw UsageError(
          fmt::format("precision={} on this CPU is emulated and many times slower than fp32 "
                      "(no native {} support); use precision=fp32 or precision=auto, or force_precision=true "
                      "to run it anyway",
                      precision.name, precision.name));
    }
    if (slow)
      warnings_.push_back(
          fmt::format("precision={} forced on a CPU that emulates it: expect it slow", precision.name));
#if TORCH_VERSION_MAJOR >= 2
    // As torch.autocast("cpu") and Lightning's bf16-mixed: fp32 weights, bf16 where
    // autocast's CPU list says. A model cast whole fails in torchvision's CPU NMS (no
    // bf16 kernel); LibTorch 1.13's CPU autocast ran 3-5x slower than fp32, so there the
    // model is still cast (docs/benchmarks.md).
    autocast_ = dtype_ == torch::kBFloat16;
#endif
  }

  module_ = load_script(config.model, channels);
  module_.eval();
  module_.to(device_);
  // Autocast keeps the weights fp32 and picks each operator's precision; without it
  // (fp16 on a CPU, or LibTorch 1.x) the model is cast as a whole.
  if (dtype_ != torch::kFloat && !autocast_) module_.to(dtype_);
  if (device.is_cuda) {
    // Off by default: every batch has the tile shape, but on an H100 cuDNN's search
    // gained nothing for ResNet-50 and its trial workspaces took the peak allocation
    // from 3.5 to 18 GiB (docs/benchmarks.md). A process-wide switch: a rank runs one model.
    at::globalContext().setBenchmarkCuDNN(config.cudnn_benchmark);
  }
  // oneDNN's convolutions want NHWC as cuDNN's tensor cores do. On this project's CPU
  // ResNet-50 in bf16 ran 2.7 tiles/s in NCHW and 8.0 in NHWC, and Faster R-CNN in fp32
  // 0.92 -> 1.08 tiles/s model-only (ResNet-50 and RetinaNet in fp32 unchanged: the
  // optimisation below prepacks their convolutions anyway); docs/benchmarks.md. Measured
  // on LibTorch 2.7 only, so a CPU keeps NCHW under 1.x.
  const bool cpu_channels_last = TORCH_VERSION_MAJOR >= 2 && (autocast_ || dtype_ == torch::kFloat);
  if (device.is_cuda || cpu_channels_last) {
    channels_last_ = config.channels_last;
    if (channels_last_) weights_to_channels_last(module_);
  }
  std::string optimisation;
  if (!device.is_cuda && (autocast_ || dtype_ == torch::kFloat)) {
    // Under autocast, freezing folds the frozen batch norms into the convolutions, so the
    // bf16 convolutions no longer hand their outputs to fp32 arithmetic and back: on this
    // project's CPU, batch 16, model-only, ResNet-50 11.9 -> 15.0 tiles/s, RetinaNet 2.22
    // -> 3.53, Faster R-CNN 1.75 -> 2.23. optimize_for_inference is not used there: its
    // prepacked fp32 kernels bypass autocast's bf16. In fp32 it stays (ResNet-50 at 512 px:
    // 2.21 -> 2.93 tiles/s); freezing alone measured no faster there (docs/benchmarks.md).
    // Some scripted models (custom operators, data-dependent control flow) refuse either;
    // they still run as scripted.
    try {
      module_ = autocast_ ? torch::jit::freeze(module_) : torch::jit::optimize_for_inference(module_);
      optimisation = autocast_ ? "frozen" : "optimised for inference";
    } catch (const c10::Error& failure) {
      warnings_.push_back(fmt::format("model '{}' runs without {}: {}", config.model,
                                      autocast_ ? "freezing" : "optimize_for_inference",
                                      first_line(failure.what_without_backtrace())));
    }
  }
  description_ = fmt::format("{} on {} in {}{}{}{}{}", config.model, device.name, precision.name,
                             precision.why.empty() ? "" : fmt::format(" ({})", precision.why),
                             autocast_ ? ", autocast" : "", channels_last_ ? ", channels-last" : "",
                             optimisation.empty() ? "" : ", " + optimisation);

  // One dummy tile: a model that wants another shape fails here, by name, not mid-run.
  try {
    dummy_output_ = forward(torch::zeros({1, channels, config.tile_size, config.tile_size}));
  } catch (const std::exception& failure) {
    const auto cause = first_line(failure.what());
    throw UsageError(fmt::format(
        "model '{}' fails on a tile of shape [1, {}, {}, {}] (batch, bands, height, width): {}; {}", config.model,
        channels, config.tile_size, config.tile_size, cause, hint_for_model_failure(cause, precision.name)));
  }
}

torch::IValue TileModel::forward(const torch::Tensor& batch) {
  c10::InferenceMode inference;
  // The profiling executor's first calls run an instrumented graph, and each new batch
  // shape (the one-tile check, a short last batch) costs another such call: on a CPU
  // Faster R-CNN's first batch of 16 ran 0.62 tiles/s so and 0.79 without it, and
  // steady batches were no faster with it (docs/benchmarks.md). The switch is per thread.
  std::optional<torch::jit::GraphOptimizerEnabledGuard> plain_executor;
  if (!device_.is_cuda()) plain_executor.emplace(false);
  auto input = batch.to(device_, input_dtype(), /*non_blocking=*/true);
  if (channels_last_) input = input.contiguous(at::MemoryFormat::ChannelsLast);
  if (!autocast_) return module_.forward({std::move(input)});
  const AutocastScope mixed_precision(device_.type(), dtype_);
  return module_.forward({std::move(input)});
}

}  // namespace mgpr::runtime
