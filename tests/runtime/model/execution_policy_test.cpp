// The execution policy as a table: for each device, build and request, the precision,
// autocast, layout and optimisation a model runs with, what precision=auto says, its
// fallback, and the refusals. Facts are given, not read from this machine, so every row
// runs everywhere.
#include "model/execution_policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "mgpr/error.hpp"
#include "support/error_of.hpp"

namespace {

namespace rt = mgpr::runtime;
using mgpr::Precision;
using rt::GraphOptimisation;
using testing::HasSubstr;

rt::ExecutionFacts cpu(std::string bf16_flag, int torch_major = 2) {
  rt::ExecutionFacts facts;
  facts.native_bf16_flag = std::move(bf16_flag);
  facts.torch_major = torch_major;
  return facts;
}

rt::ExecutionFacts gpu(int compute_capability) {
  rt::ExecutionFacts facts;
  facts.is_cuda = true;
  facts.compute_capability = compute_capability;
  facts.device_product_name = "Test GPU";
  return facts;
}

struct Expected {
  Precision precision;
  bool autocast;
  bool channels_last;
  GraphOptimisation optimisation;
  std::string why;  // empty: not automatic
  bool warns = false;
};

struct Row {
  std::string name;
  rt::ExecutionRequest request;
  rt::ExecutionFacts facts;
  std::vector<Expected> plans;  // the plan and, for auto, its fallback
};

const rt::ExecutionRequest kAuto{Precision::kAuto, false, true};
const rt::ExecutionRequest kFp32{Precision::kFp32, false, true};
const rt::ExecutionRequest kBf16{Precision::kBf16, false, true};
const rt::ExecutionRequest kBf16Forced{Precision::kBf16, true, true};
const rt::ExecutionRequest kFp16Forced{Precision::kFp16, true, true};
const rt::ExecutionRequest kFp32Nchw{Precision::kFp32, false, false};

const std::vector<Row>& rows() {
  static const std::vector<Row> table{
      {"auto on an AMX CPU runs bf16 autocast, frozen, with an fp32 fallback",
       kAuto,
       cpu("amx_bf16"),
       {{Precision::kBf16, true, true, GraphOptimisation::kFreeze, "auto: native amx_bf16"},
        {Precision::kFp32, false, true, GraphOptimisation::kOptimizeForInference, "auto: the model fails in bf16"}}},
      {"auto on an AVX-512 bf16 CPU",
       kAuto,
       cpu("avx512_bf16"),
       {{Precision::kBf16, true, true, GraphOptimisation::kFreeze, "auto: native avx512_bf16"},
        {Precision::kFp32, false, true, GraphOptimisation::kOptimizeForInference, "auto: the model fails in bf16"}}},
      {"auto on an AVX2-only CPU runs fp32, optimised, channels-last",
       kAuto,
       cpu(""),
       {{Precision::kFp32, false, true, GraphOptimisation::kOptimizeForInference,
         "auto: this CPU has no native bf16"}}},
      {"auto under LibTorch 1.x keeps fp32 and NCHW even with native bf16",
       kAuto,
       cpu("amx_bf16", 1),
       {{Precision::kFp32, false, false, GraphOptimisation::kOptimizeForInference,
         "auto: LibTorch 1.x's CPU bf16 is slower than fp32"}}},
      {"auto on a GPU is fp32, channels-last, not optimised",
       kAuto,
       gpu(90),
       {{Precision::kFp32, false, true, GraphOptimisation::kNone, "auto: fp32 on a GPU"}}},
      {"bf16 asked for on an Ampere GPU runs autocast",
       kBf16,
       gpu(80),
       {{Precision::kBf16, true, true, GraphOptimisation::kNone, ""}}},
      {"bf16 forced on a Turing GPU runs autocast",
       kBf16Forced,
       gpu(75),
       {{Precision::kBf16, true, true, GraphOptimisation::kNone, ""}}},
      {"bf16 asked for on a CPU with native bf16",
       kBf16,
       cpu("amx_bf16"),
       {{Precision::kBf16, true, true, GraphOptimisation::kFreeze, ""}}},
      {"bf16 forced on a CPU that emulates it warns",
       kBf16Forced,
       cpu(""),
       {{Precision::kBf16, true, true, GraphOptimisation::kFreeze, "", true}}},
      {"bf16 under LibTorch 1.x casts the model whole",
       kBf16,
       cpu("amx_bf16", 1),
       {{Precision::kBf16, false, false, GraphOptimisation::kNone, ""}}},
      {"fp16 forced on a CPU casts the model whole, NCHW, and warns",
       kFp16Forced,
       cpu("amx_bf16"),
       {{Precision::kFp16, false, false, GraphOptimisation::kNone, "", true}}},
      {"fp32 with channels_last=false stays NCHW",
       kFp32Nchw,
       cpu(""),
       {{Precision::kFp32, false, false, GraphOptimisation::kOptimizeForInference, ""}}},
      {"fp32 asked for on a GPU", kFp32, gpu(70), {{Precision::kFp32, false, true, GraphOptimisation::kNone, ""}}},
  };
  return table;
}

TEST(ExecutionPolicy, EveryRowOfTheTable) {
  for (const auto& row : rows()) {
    SCOPED_TRACE(row.name);
    const auto plans = rt::plan_execution(row.request, row.facts);
    ASSERT_EQ(plans.size(), row.plans.size());
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const auto& got = plans[i];
      const auto& want = row.plans[i];
      EXPECT_EQ(got.precision, want.precision) << "plan " << i;
      EXPECT_EQ(got.autocast, want.autocast) << "plan " << i;
      EXPECT_EQ(got.channels_last, want.channels_last) << "plan " << i;
      EXPECT_EQ(got.optimisation, want.optimisation) << "plan " << i;
      EXPECT_EQ(got.why, want.why) << "plan " << i;
      EXPECT_EQ(got.automatic, !want.why.empty()) << "plan " << i;
      EXPECT_EQ(!got.warnings.empty(), want.warns) << "plan " << i;
      EXPECT_FALSE(got.cudnn_benchmark) << "plan " << i;
    }
  }
}

struct Refusal {
  std::string name;
  rt::ExecutionRequest request;
  rt::ExecutionFacts facts;
  std::vector<std::string> says;
};

TEST(ExecutionPolicy, PrecisionsTheDeviceLacksAreRefusedWithTheFix) {
  const std::vector<Refusal> refusals{
      {"bf16 before Ampere",
       kBf16,
       gpu(75),
       {"precision=bf16 on Test GPU (compute capability 7.5)", "8.0 or newer", "precision=fp32 or fp16",
        "force_precision=true"}},
      {"fp16 before Volta",
       {Precision::kFp16, false, true},
       gpu(61),
       {"precision=fp16", "7.0 or newer", "force_precision=true"}},
      {"bf16 on a CPU without it",
       kBf16,
       cpu(""),
       {"precision=bf16 on this CPU is emulated", "precision=auto", "force_precision=true"}},
      {"fp16 on any CPU", {Precision::kFp16, false, true}, cpu("amx_bf16"), {"precision=fp16 on this CPU"}},
  };
  for (const auto& refusal : refusals) {
    SCOPED_TRACE(refusal.name);
    const auto message = mgpr::test::error_of([&] { (void)rt::plan_execution(refusal.request, refusal.facts); });
    for (const auto& part : refusal.says) EXPECT_THAT(message, HasSubstr(part));
  }
}

// A CPU runs a batch as passes of a few tiles (the same speed, a fraction of the memory);
// a GPU runs it whole.
TEST(ExecutionPolicy, ACpuSplitsABatchIntoPassesOfAboutFourMegapixels) {
  struct PassRow {
    std::string name;
    int batch_size;
    int tile_size;
    int cpu_forward_tiles;
    rt::ExecutionFacts facts;
    int forward_tiles;  // 0: the batch whole
  };
  const std::vector<PassRow> table{
      {"1024 px: 4 tiles a pass", 16, 1024, 0, cpu("avx512_bf16"), 4},
      {"512 px: 8 tiles a pass, not 16", 16, 512, 0, cpu(""), 8},
      {"400 px: at most 8 tiles", 32, 400, 0, cpu(""), 8},
      {"2048 px: one tile a pass", 4, 2048, 0, cpu(""), 1},
      {"4096 px: still one tile", 4, 4096, 0, cpu(""), 1},
      {"a batch no larger than a pass runs whole", 4, 1024, 0, cpu(""), 0},
      {"cpu_forward_tiles sets the pass", 16, 1024, 3, cpu(""), 3},
      {"cpu_forward_tiles at the batch size runs it whole", 16, 1024, 16, cpu(""), 0},
      {"a GPU runs the batch whole", 16, 1024, 0, gpu(90), 0},
      {"a GPU ignores cpu_forward_tiles", 16, 1024, 2, gpu(90), 0},
  };
  for (const auto& row : table) {
    SCOPED_TRACE(row.name);
    const rt::ExecutionRequest request{Precision::kFp32, false,         true,
                                       row.batch_size,   row.tile_size, row.cpu_forward_tiles};
    for (const auto& plan : rt::plan_execution(request, row.facts)) EXPECT_EQ(plan.forward_tiles, row.forward_tiles);
  }
  EXPECT_EQ(rt::cpu_forward_tiles_for(1), rt::kCpuForwardTiles);
  EXPECT_EQ(rt::cpu_forward_tiles_for(0), rt::kCpuForwardTiles);
}

// onednn_fusion=true: a CPU's frozen fp32 or autocast graph, for any task but detection
// (LibTorch 2.7's fuser fails on torchvision's detectors); it takes freezing's aten
// operators, not optimize_for_inference's prepacked ones.
TEST(ExecutionPolicy, OneDnnFusionIsForCpuGraphsOtherThanDetectorsWhenAskedFor) {
  struct FusionRow {
    std::string name;
    Precision precision;
    bool asked;
    mgpr::Task task;
    rt::ExecutionFacts facts;
    bool fused;
  };
  const std::vector<FusionRow> table{
      {"fp32 classifier", Precision::kFp32, true, mgpr::Task::kClassify, cpu(""), true},
      {"bf16 segmenter under autocast", Precision::kAuto, true, mgpr::Task::kSegment, cpu("avx512_bf16"), true},
      {"not asked for (the default)", Precision::kFp32, false, mgpr::Task::kClassify, cpu(""), false},
      {"a detector", Precision::kFp32, true, mgpr::Task::kDetect, cpu("amx_bf16"), false},
      {"LibTorch 1.x", Precision::kFp32, true, mgpr::Task::kClassify, cpu("", 1), false},
      {"a GPU", Precision::kFp32, true, mgpr::Task::kClassify, gpu(90), false},
  };
  for (const auto& row : table) {
    SCOPED_TRACE(row.name);
    const rt::ExecutionRequest request{row.precision, false, true, 16, 512, 0, row.asked, row.task};
    const auto plan = rt::plan_execution(request, row.facts).front();
    EXPECT_EQ(plan.onednn_fusion, row.fused);
    if (row.fused) {
      EXPECT_EQ(plan.optimisation, GraphOptimisation::kFreeze);
    }
  }
  // Unfused, fp32 keeps optimize_for_inference.
  EXPECT_EQ(rt::plan_execution(kFp32, cpu("")).front().optimisation, GraphOptimisation::kOptimizeForInference);
}

// jit_executor=auto resolves to the simple executor on a CPU (as before the key existed)
// and on a GPU (LibTorch 2.11's TensorExpr fuser fails on scripted RetinaNet there); a
// value asked for is kept on any device, in the fallback plan too. oneDNN Graph fusion
// leaves the unfused passes' executor as resolved: its own passes always profile.
TEST(ExecutionPolicy, JitExecutorAutoIsSimpleOnEveryDeviceAndAnAskedOneIsKept) {
  using mgpr::JitExecutor;
  struct ExecutorRow {
    std::string name;
    JitExecutor asked;
    bool onednn_fusion;
    rt::ExecutionFacts facts;
    JitExecutor runs;
    bool fused;
  };
  const std::vector<ExecutorRow> table{
      {"auto on an AVX2 CPU", JitExecutor::kAuto, false, cpu(""), JitExecutor::kSimple, false},
      {"auto on an AMX CPU, bf16 and its fp32 fallback", JitExecutor::kAuto, false, cpu("amx_bf16"),
       JitExecutor::kSimple, false},
      {"auto under LibTorch 1.x", JitExecutor::kAuto, false, cpu("", 1), JitExecutor::kSimple, false},
      {"auto on a GPU", JitExecutor::kAuto, false, gpu(90), JitExecutor::kSimple, false},
      {"auto on a CPU with oneDNN Graph fusion", JitExecutor::kAuto, true, cpu(""), JitExecutor::kSimple, true},
      {"simple asked for on a GPU", JitExecutor::kSimple, false, gpu(90), JitExecutor::kSimple, false},
      {"profiling asked for on a GPU", JitExecutor::kProfiling, false, gpu(90), JitExecutor::kProfiling, false},
      {"profiling without the fuser on a GPU", JitExecutor::kProfilingNoFuser, false, gpu(80),
       JitExecutor::kProfilingNoFuser, false},
      {"profiling asked for on a CPU", JitExecutor::kProfiling, false, cpu("avx512_bf16"), JitExecutor::kProfiling,
       false},
      {"profiling with oneDNN Graph fusion", JitExecutor::kProfiling, true, cpu(""), JitExecutor::kProfiling, true},
      {"simple with oneDNN Graph fusion: fused passes still profile", JitExecutor::kSimple, true, cpu(""),
       JitExecutor::kSimple, true},
      {"profiling_no_fuser on a GPU ignores onednn_fusion", JitExecutor::kProfilingNoFuser, true, gpu(90),
       JitExecutor::kProfilingNoFuser, false},
  };
  for (const auto& row : table) {
    SCOPED_TRACE(row.name);
    rt::ExecutionRequest request{Precision::kAuto, false, true, 16, 512, 0, row.onednn_fusion, mgpr::Task::kSegment};
    request.jit_executor = row.asked;
    for (const auto& plan : rt::plan_execution(request, row.facts)) {
      EXPECT_EQ(plan.jit_executor, row.runs);
      EXPECT_EQ(plan.jit_executor_asked, row.asked != JitExecutor::kAuto);
      EXPECT_EQ(plan.onednn_fusion, row.fused);
    }
  }
  // A request that does not name it, as every caller before the key: auto.
  EXPECT_EQ(rt::ExecutionRequest{}.jit_executor, JitExecutor::kAuto);
  EXPECT_FALSE(rt::plan_execution(kFp32, gpu(90)).front().jit_executor_asked);
}

TEST(ExecutionPolicy, CudnnBenchmarkIsAGpuSwitchOnly) {
  EXPECT_TRUE(rt::plan_execution(kFp32, gpu(90), true).front().cudnn_benchmark);
  EXPECT_FALSE(rt::plan_execution(kFp32, cpu(""), true).front().cudnn_benchmark);
}

}  // namespace
