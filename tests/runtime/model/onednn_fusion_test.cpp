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

// A convolution (which the fuser takes into a partition) in a model that fails on one
// call, or on none with fail_on = 0. calls counts the model's calls: the one-tile check
// is the first.
std::filesystem::path conv_model(const std::string& name, int fail_on) {
  torch::jit::Module module("FailsOnOneCall");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.register_attribute("calls", c10::IntType::get(), 0);
  module.register_attribute("fail_on", c10::IntType::get(), fail_on);
  module.register_parameter("weight", torch::full({2, 3, 3, 3}, 0.01), false);
  module.define(R"(
def forward(self, x):
    self.calls += 1
    assert self.calls != self.fail_on, "fails on call " + str(self.fail_on)
    y = torch.relu(torch.conv2d(x, self.weight, None, 1, 1))
    return torch.mean(y, [2, 3])
)");
  auto file = mgpr::test::program_temp_dir().path() / name;
  module.save(file.string());
  return file;
}

// The same model as the next test's, failing on no call: the fuser does take it.
TEST(OneDnnFusion, TheConvolutionModelIsFusedWhenItDoesNotFail) {
  if (!rt::enable_onednn_fusion())
    GTEST_SKIP() << "this LibTorch has no oneDNN Graph fuser (1.x, or built without oneDNN)";
  auto model = load(conv_model("never_fails.pt", 0).string(), 8, true);
  const auto batch = torch::rand({4, 3, 8, 8});
  for (int call = 0; call < 3; ++call) model.forward(batch);
  EXPECT_NE(last_graph().find("oneDNNFusionGroup"), std::string::npos) << last_graph();
}

// A model that fails on its second call, where the fuser compiles: that batch runs
// again unfused, the message says so and how to skip the attempt, and later batches run
// unfused (fused() is what run_pass reads to choose the executor).
TEST(OneDnnFusion, AModelThatFailsUnderTheFuserRunsUnfused) {
  if (!rt::enable_onednn_fusion())
    GTEST_SKIP() << "this LibTorch has no oneDNN Graph fuser (1.x, or built without oneDNN)";
  auto model = load(conv_model("fails_once.pt", 2).string(), 8, true);  // the one-tile check is call 1
  auto plain = load(conv_model("plain.pt", 0).string(), 8, false);
  const auto batch = torch::arange(4 * 3 * 8 * 8, torch::kFloat).reshape({4, 3, 8, 8}) / 768;
  const auto expected = plain.forward(batch).toTensor();
  EXPECT_TRUE(model.fused());
  EXPECT_FALSE(plain.fused());
  testing::internal::CaptureStderr();
  const auto first = model.forward(batch).toTensor();
  const auto said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("failed under oneDNN Graph fusion ("), std::string::npos) << said;
  EXPECT_NE(said.find("fails on call 2"), std::string::npos) << said;
  EXPECT_NE(said.find("onednn_fusion=false"), std::string::npos) << said;
  EXPECT_TRUE(torch::allclose(first, expected, 1e-5, 1e-5));
  EXPECT_FALSE(model.fused());
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(call);
    testing::internal::CaptureStderr();
    EXPECT_TRUE(torch::allclose(model.forward(batch).toTensor(), expected, 1e-5, 1e-5));
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
  EXPECT_FALSE(model.fused());
}

}  // namespace
