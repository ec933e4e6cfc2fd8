// Runs only where LibTorch sees a CUDA device (the GPU machine); elsewhere each test
// is skipped with the reason, never faked.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

namespace {

// A skip in SetUp skips the whole test body.
class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
    }
  }
};

TEST_F(Cuda, DeviceIsVisible) { EXPECT_GE(torch::cuda::device_count(), 1U); }

TEST_F(Cuda, MatmulMatchesCpu) {
  torch::manual_seed(0);
  const auto a = torch::randn({256, 256});
  const auto b = torch::randn({256, 256});
  const auto on_gpu = torch::matmul(a.cuda(), b.cuda()).cpu();
  EXPECT_TRUE(torch::allclose(on_gpu, torch::matmul(a, b), 1e-3, 1e-3));
}

}  // namespace
