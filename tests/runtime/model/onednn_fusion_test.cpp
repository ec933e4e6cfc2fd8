// onednn_fusion=true on a CPU: the model runs through oneDNN Graph's fused partitions
// (seen in the graph the executor last ran) with the unfused model's answer, and a model
// that fails under the fuser runs that batch and the rest unfused.
#include <gtest/gtest.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "model/model.hpp"
#include "model/onednn_fusion.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace rt = mgpr::runtime;
using mgpr::Precision;

const rt::DeviceChoice kCpu{};

rt::TileModel load(const std::string& model, int tile_size, bool fused) {
  const rt::ExecutionRequest request{Precision::kFp32, false, true, 4, tile_size, 0, fused, mgpr::Task::kClassify};
  return rt::TileModel({model, {}, tile_size}, kCpu, 3, rt::plan_execution(request, rt::execution_facts(kCpu)));
}

std::string last_graph() {
  std::ostringstream text;
  if (const auto graph = torch::jit::lastExecutedOptimizedGraph()) text << *graph;
  return text.str();
}

TEST(OneDnnFusion, ResNet50IsFusedAndGivesTheUnfusedAnswer) {
  if (!rt::enable_onednn_fusion())
    GTEST_SKIP() << "this LibTorch has no oneDNN Graph fuser (1.x, or built without oneDNN)";
  auto plain = load("builtin:resnet50", 64, false);
  auto fused = load("builtin:resnet50", 64, true);
  EXPECT_NE(fused.description().find("oneDNN Graph fusion"), std::string::npos) << fused.description();
  EXPECT_EQ(plain.description().find("oneDNN"), std::string::npos) << plain.description();
  const auto batch = torch::rand({4, 3, 64, 64});
  const auto expected = plain.forward(batch).toTensor();
  // The profiling executor profiles a shape's first call and compiles on its second.
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(call);
    const auto got = fused.forward(batch).toTensor();
    ASSERT_EQ(got.sizes(), expected.sizes());
    EXPECT_TRUE(torch::allclose(got, expected, 1e-4, 1e-4)) << (got - expected).abs().max().item<float>();
  }
  EXPECT_NE(last_graph().find("oneDNNFusionGroup"), std::string::npos) << last_graph();
}

// A model that fails on its second call, where the fuser compiles: that batch runs
// again unfused, the message says so and how to skip the attempt, and later batches run
// unfused (the model would fail again on no other call).
TEST(OneDnnFusion, AModelThatFailsUnderTheFuserRunsUnfused) {
  if (!rt::enable_onednn_fusion())
    GTEST_SKIP() << "this LibTorch has no oneDNN Graph fuser (1.x, or built without oneDNN)";
  torch::jit::Module module("FailsOnItsSecondCall");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.register_attribute("calls", c10::IntType::get(), 0);
  module.define(R"(
def forward(self, x):
    self.calls += 1
    assert self.calls != 2, "fails on its second call"
    m = torch.mean(x, [1, 2, 3])
    return torch.stack([m, -m], 1)
)");
  const auto file = mgpr::test::program_temp_dir().path() / "fails_once.pt";
  module.save(file.string());
  auto model = load(file.string(), 8, true);  // the one-tile check is its first call
  const auto batch = torch::arange(4 * 3 * 8 * 8, torch::kFloat).reshape({4, 3, 8, 8});
  testing::internal::CaptureStderr();
  const auto first = model.forward(batch).toTensor();
  const auto said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("failed under oneDNN Graph fusion ("), std::string::npos) << said;
  EXPECT_NE(said.find("fails on its second call"), std::string::npos) << said;
  EXPECT_NE(said.find("onednn_fusion=false"), std::string::npos) << said;
  EXPECT_TRUE(torch::allclose(first.select(1, 0), batch.mean({1, 2, 3})));
  testing::internal::CaptureStderr();
  EXPECT_TRUE(torch::allclose(model.forward(batch).toTensor(), first));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
