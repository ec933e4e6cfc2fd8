#pragma once
// How a model runs on a device: the precision (what precision=auto becomes, and whether a
// precision asked for is refused), autocast or a cast model, the memory layout, the
// graph optimisation and the TorchScript executor. A policy on facts only, decided once by the run plan and carried
// out by TileModel; each benchmark finding changes a row here, not the model loader.
// No LibTorch: the table of cases is tested as data (tests/runtime/model).
#include <string>
#include <vector>

#include "mgpr/run_choices.hpp"

namespace mgpr::runtime {

// What the policy asks of the machine and the build.
struct ExecutionFacts {
  bool is_cuda = false;
  int compute_capability = 0;       // major * 10 + minor on a GPU; 0 on a CPU
  std::string device_product_name;  // "NVIDIA H100 80GB HBM3"; for messages
  // "amx_bf16" or "avx512_bf16" where the CPU computes bf16 natively, else empty.
  std::string native_bf16_flag;
  int torch_major = 2;  // LibTorch's major version
};

// What the user asked for (precision=, force_precision=, channels_last=), the batch the
// model will be given (batch_size=, the model's tile_size=, cpu_forward_tiles=),
// whether oneDNN Graph may fuse it (onednn_fusion=) for the task it serves (task=), and
// the TorchScript executor (jit_executor=).
struct ExecutionRequest {
  Precision precision = Precision::kAuto;
  bool force_precision = false;
  bool channels_last = true;
  int batch_size = 1;
  int tile_size = 1024;
  int cpu_forward_tiles = 0;    // 0: chosen from the tile size (forward_tiles_per_pass)
  bool onednn_fusion = false;   // onednn_fusion=: off by default
  Task task = Task::kClassify;  // detectors are never fused: LibTorch 2.7's fuser fails on them
  JitExecutor jit_executor = JitExecutor::kAuto;
};

enum class GraphOptimisation {
  kNone,
  kFreeze,                // torch::jit::freeze: batch norms folded, keeps autocast's bf16
  kOptimizeForInference,  // torch::jit::optimize_for_inference: prepacked fp32 kernels
};

struct ExecutionPlan {
  Precision precision = Precision::kFp32;  // never kAuto
  bool automatic = false;                  // chosen by precision=auto
  std::string why;                         // for the banner; empty unless automatic
  bool autocast = false;                   // fp32 weights, autocast picks each operator's type
  bool channels_last = false;              // weights and inputs in NHWC
  GraphOptimisation optimisation = GraphOptimisation::kNone;
  bool cudnn_benchmark = false;  // GPU only: cuDNN times its algorithms
  // CPU only: a batch runs as forward passes of at most this many tiles; 0: the whole
  // batch in one pass (always on a GPU).
  int forward_tiles = 0;
  // CPU only: oneDNN Graph (LLGA) fuses the frozen graph's convolutions with what follows
  // them; the model then runs under the profiling executor, which the fuser needs.
  bool onednn_fusion = false;
  // The executor of the model's unfused passes, never kAuto. A pass under oneDNN Graph's
  // fuser runs under the profiling executor whatever this says: the fuser is one of its
  // passes.
  JitExecutor jit_executor = JitExecutor::kSimple;
  bool jit_executor_asked = false;    // jit_executor= named it (not auto): the banner names it
  std::vector<std::string> warnings;  // the user should know (a slow precision forced)
};

// The plans to try in order: the one asked for, and after it, for precision=auto only, the
// fp32 plan that runs when the model fails in the reduced precision auto chose. Throws
// UsageError naming precision= and the fix for a precision the device cannot run or
// only emulates (unless force_precision).
std::vector<ExecutionPlan> plan_execution(const ExecutionRequest& request, const ExecutionFacts& facts,
                                          bool cudnn_benchmark = false);

// The tiles one forward pass takes on a CPU when cpu_forward_tiles=0: about
// kCpuForwardPixels pixels and at most kCpuForwardTiles tiles (4 tiles of 1024 px, 8 of
// 512 px or less), at least one tile.
inline constexpr long long kCpuForwardPixels = 4LL << 20;
inline constexpr int kCpuForwardTiles = 8;
int cpu_forward_tiles_for(int tile_size);

// "fp32", "fp16", "bf16".
std::string_view precision_name(const ExecutionPlan& plan);

// This CPU's native bf16 flag from /proc/cpuinfo ("amx_bf16", "avx512_bf16"), or empty
// where bf16 would be emulated (measured 25x slower than fp32 on such a CPU).
std::string native_bf16_flag();

}  // namespace mgpr::runtime
