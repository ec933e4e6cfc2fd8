// AutocastScope on CPU, where it can run here: the GPU path relies on the same
// mechanism (the dispatcher's autocast keys, thread-local state), so these check that
// the scope switches it on and off and that a TorchScript module obeys it.
#include "model/autocast_scope.hpp"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <stdexcept>

namespace {

namespace rt = mgpr::runtime;

const auto kCpu = c10::DeviceType::CPU;

torch::Tensor square_input() { return torch::ones({4, 4}); }

TEST(AutocastScope, MatrixProductRunsInTheScopesPrecisionAndFp32Outside) {
  const auto x = square_input();
  EXPECT_EQ(torch::mm(x, x).scalar_type(), torch::kFloat);
  {
    const rt::AutocastScope scope(kCpu, torch::kBFloat16);
    const auto product = torch::mm(x, x);
    EXPECT_EQ(product.scalar_type(), torch::kBFloat16);
    EXPECT_EQ(product[0][0].item<float>(), 4.0F);
    // Reductions are on autocast's fp32 list: they stay exact.
    EXPECT_EQ(torch::sum(x).scalar_type(), torch::kFloat);
  }
  EXPECT_EQ(torch::mm(x, x).scalar_type(), torch::kFloat);
}

TEST(AutocastScope, TorchScriptModuleObeysTheCallersScope) {
  torch::jit::Module module("Product");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(R"(
def forward(self, x):
    return torch.mm(x, x)
)");
  c10::InferenceMode inference;
  const auto x = square_input();
  EXPECT_EQ(module.forward({x}).toTensor().scalar_type(), torch::kFloat);
  const rt::AutocastScope scope(kCpu, torch::kBFloat16);
  EXPECT_EQ(module.forward({x}).toTensor().scalar_type(), torch::kBFloat16);
}

TEST(AutocastScope, NestedScopeRestoresTheOuterOne) {
  const auto x = square_input();
  const rt::AutocastScope outer(kCpu, torch::kBFloat16);
  {
    const rt::AutocastScope inner(kCpu, torch::kBFloat16);
    EXPECT_EQ(torch::mm(x, x).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(x, x).scalar_type(), torch::kBFloat16);
}

TEST(AutocastScope, ExceptionLeavesAutocastOff) {
  EXPECT_THROW(
      {
        const rt::AutocastScope scope(kCpu, torch::kBFloat16);
        throw std::runtime_error("model failed");
      },
      std::runtime_error);
  const auto x = square_input();
  EXPECT_EQ(torch::mm(x, x).scalar_type(), torch::kFloat);
}

}  // namespace
