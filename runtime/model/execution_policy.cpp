#include "model/execution_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

struct PrecisionChoice {
  Precision precision;
  bool automatic = false;
  std::string why;
};

// precision=auto: what users' Python does on the device, where it pays. On a CPU that
// computes bf16 natively, LibTorch 2.x's autocast ran ResNet-50 1.5x and the detectors
// 1.3-1.5x faster than fp32, end to end (docs/benchmarks.md; multigpu_raster forces
// bf16-mixed on CPUs); LibTorch 1.13's ran slower than fp32, and GPUs keep fp32
// (Lightning's default there).
PrecisionChoice resolve_precision(Precision asked, const ExecutionFacts& facts) {
  if (asked != Precision::kAuto) return {asked, false, {}};
  if (facts.is_cuda) return {Precision::kFp32, true, "auto: fp32 on a GPU"};
  if (facts.torch_major < 2) return {Precision::kFp32, true, "auto: LibTorch 1.x's CPU bf16 is slower than fp32"};
  if (!facts.native_bf16_flag.empty()) {
    return {Precision::kBf16, true, fmt::format("auto: native {}", facts.native_bf16_flag)};
  }
  return {Precision::kFp32, true, "auto: this CPU has no native bf16"};
}

// Refuses, or warns of, a reduced precision the device lacks; says whether autocast runs it.
bool reduced_precision_autocast(const PrecisionChoice& choice, const ExecutionRequest& request,
                                const ExecutionFacts& facts, std::vector<std::string>& warnings) {
  const auto name = name_of(choice.precision);
  if (facts.is_cuda) {
    // bf16 needs Ampere (8.0) or newer; fp16 tensor cores exist since Volta (7.0).
    const int needed = choice.precision == Precision::kBf16 ? 80 : 70;
    if (facts.compute_capability < needed && !request.force_precision) {
      throw UsageError(
          fmt::format("precision={} on {} (compute capability {}.{}) is emulated or unsupported: it "
                      "needs {}.{} or newer; use precision=fp32{}, or force_precision=true to run it "
                      "anyway",
                      name, facts.device_product_name, facts.compute_capability / 10, facts.compute_capability % 10,
                      needed / 10, needed % 10, choice.precision == Precision::kBf16 ? " or fp16" : ""));
    }
    return true;
  }
  const bool slow = choice.precision == Precision::kFp16 || facts.native_bf16_flag.empty();
  if (slow && !request.force_precision) {
    throw UsageError(
        fmt::format("precision={} on this CPU is emulated and many times slower than fp32 "
                    "(no native {} support); use precision=fp32 or precision=auto, or force_precision=true "
                    "to run it anyway",
                    name, name));
  }
  if (slow) warnings.push_back(fmt::format("precision={} forced on a CPU that emulates it: expect it slow", name));
  // As torch.autocast("cpu") and Lightning's bf16-mixed: fp32 weights, bf16 where
  // autocast's CPU list says. A model cast whole fails in torchvision's CPU NMS (no bf16
  // kernel); LibTorch 1.13's CPU autocast ran 3-5x slower than fp32, so there the model
  // is still cast (docs/benchmarks.md).
  return facts.torch_major >= 2 && choice.precision == Precision::kBf16;
}

// jit_executor=auto: the simple executor (the graph optimiser off: no profiling runs, no
// fusers) on CPUs and GPUs alike. On a CPU the profiling executor's first calls run an
// instrumented graph, again for each new batch shape (the one-tile check, a short last
// batch): Faster R-CNN's first batch of 16 ran 0.62 tiles/s so and 0.79 without, and
// steady batches were no faster with it (docs/benchmarks.md). On a GPU the profiling
// executor hands the graph to LibTorch's TensorExpr fuser, which has failed on scripted
// torchvision RetinaNet, and it bought nothing where it ran: on an H200 RetinaNet,
// Faster R-CNN and DeepForest's RetinaNet ran within ±5 % of the simple executor's rate
// either way round, with the same boxes (docs/benchmarks.md, bench/gpu-check); cuDNN and
// cuBLAS do the heavy kernels under both.
JitExecutor resolve_jit_executor(JitExecutor asked) {
  return asked == JitExecutor::kAuto ? JitExecutor::kSimple : asked;
}

ExecutionPlan plan_for(const PrecisionChoice& choice, const ExecutionRequest& request, const ExecutionFacts& facts,
                       bool cudnn_benchmark) {
  ExecutionPlan plan;
  plan.precision = choice.precision;
  plan.automatic = choice.automatic;
  plan.why = choice.why;
  const bool fp32 = choice.precision == Precision::kFp32;
  if (!fp32) plan.autocast = reduced_precision_autocast(choice, request, facts, plan.warnings);
  // oneDNN's convolutions want NHWC as cuDNN's tensor cores do: on a CPU ResNet-50 in bf16
  // ran 2.7 tiles/s in NCHW and 8.0 in NHWC, and Faster R-CNN in fp32 0.92 -> 1.08 tiles/s
  // model-only (ResNet-50 and RetinaNet in fp32 unchanged: the optimisation below prepacks
  // their convolutions anyway); docs/benchmarks.md. Measured on LibTorch 2.7 only, so a
  // CPU keeps NCHW under 1.x, and for a model cast whole.
  const bool cpu_channels_last = facts.torch_major >= 2 && (plan.autocast || fp32);
  plan.channels_last = request.channels_last && (facts.is_cuda || cpu_channels_last);
  if (!facts.is_cuda && (plan.autocast || fp32)) {
    // Under autocast, freezing folds the frozen batch norms into the convolutions, so the
    // bf16 convolutions no longer hand their outputs to fp32 arithmetic and back (batch
    // 16, model-only: ResNet-50 11.9 -> 15.0 tiles/s, RetinaNet 2.22 -> 3.53, Faster
    // R-CNN 1.75 -> 2.23). optimize_for_inference is not used there: its prepacked fp32
    // kernels bypass autocast's bf16. In fp32 it stays (ResNet-50 at 512 px: 2.21 -> 2.93
    // tiles/s); freezing alone measured no faster there (docs/benchmarks.md).
    plan.optimisation = plan.autocast ? GraphOptimisation::kFreeze : GraphOptimisation::kOptimizeForInference;
    // oneDNN Graph (onednn_fusion=true) fuses a frozen graph's convolutions with their
    // additions and activations. It needs aten's own operators, so it replaces
    // optimize_for_inference's prepacked ones, and the profiling executor. Off by default:
    // for ResNet-50 at 512 px on an EPYC Zen 4 it ran 7 % faster in fp32 and 12 % slower
    // in bf16, with a peak of 2.0 GiB against 1.1 in fp32 and 3.4 against 0.9 in bf16
    // (docs/benchmarks.md). LibTorch 2.7's fuser fails on torchvision's detectors ("bad
    // optional access" on their second call), which are never given it; a model it fails
    // on later runs unfused from then on (TileModel).
    plan.onednn_fusion = request.onednn_fusion && facts.torch_major >= 2 && request.task != Task::kDetect;
    if (plan.onednn_fusion) plan.optimisation = GraphOptimisation::kFreeze;
  }
  // Off by default: every batch has the tile shape, but on an H100 cuDNN's search gained
  // nothing for ResNet-50 and its trial workspaces took the peak allocation from 3.5 to
  // 18 GiB (docs/benchmarks.md).
  plan.cudnn_benchmark = facts.is_cuda && cudnn_benchmark;
  plan.jit_executor = resolve_jit_executor(request.jit_executor);
  plan.jit_executor_asked = request.jit_executor != JitExecutor::kAuto;
  // A CPU is as fast on a few tiles at a time as on the whole batch, but a pass's
  // activations grow with its tiles: a batch of 16 tiles of 1024 px through Faster R-CNN
  // in bf16 took 15.7-16.6 s as one pass or as passes of 4, peaking at 5.3 GiB against
  // 1.9 GiB; ResNet-50 at 512 px took as long in passes of 16, 8 or 4 (docs/benchmarks.md).
  // A GPU needs the whole batch to be busy.
  if (!facts.is_cuda) {
    const int tiles =
        request.cpu_forward_tiles > 0 ? request.cpu_forward_tiles : cpu_forward_tiles_for(request.tile_size);
    if (tiles < request.batch_size) plan.forward_tiles = tiles;
  }
  return plan;
}

}  // namespace

std::vector<ExecutionPlan> plan_execution(const ExecutionRequest& request, const ExecutionFacts& facts,
                                          bool cudnn_benchmark) {
  const auto choice = resolve_precision(request.precision, facts);
  std::vector<ExecutionPlan> plans{plan_for(choice, request, facts, cudnn_benchmark)};
  // precision=auto promised a run, not bf16: a model without bf16 kernels runs in fp32.
  if (choice.automatic && choice.precision != Precision::kFp32) {
    plans.push_back(
        plan_for({Precision::kFp32, true, "auto: the model fails in bf16"}, request, facts, cudnn_benchmark));
  }
  return plans;
}

int cpu_forward_tiles_for(int tile_size) {
  const long long tile_pixels = static_cast<long long>(std::max(tile_size, 1)) * std::max(tile_size, 1);
  return static_cast<int>(std::clamp(kCpuForwardPixels / tile_pixels, 1LL, static_cast<long long>(kCpuForwardTiles)));
}

std::string_view precision_name(const ExecutionPlan& plan) { return name_of(plan.precision); }

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

}  // namespace mgpr::runtime
