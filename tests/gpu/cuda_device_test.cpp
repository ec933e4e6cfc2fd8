// Runs only where LibTorch sees a CUDA device (the GPU machine); elsewhere each test
// is skipped with the reason, never faked.
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "model/cuda_backend.hpp"
#include "model/device_memory.hpp"
#include "tasks/task_factories.hpp"

namespace {

namespace rt = mgpr::runtime;

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

// The pipeline samples the rank's device from its post-processing thread, which never
// chose a device: the figures must be the rank's device's (the last one here, so that
// with several GPUs it is not the thread's device 0), and the thread's current device
// what it was. model/device_memory_test.cpp checks the same with a fake, without a GPU.
TEST_F(Cuda, MemoryIsSampledOnTheRanksDeviceFromAThreadThatChoseNone) {
  const auto device = static_cast<c10::DeviceIndex>(torch::cuda::device_count() - 1);
  const torch::Device rank_device(torch::kCUDA, device);
  // The rank's own tensors, so that its device's card and allocator show them.
  constexpr std::int64_t kHeld = 256LL << 20;
  const auto held = torch::empty({kHeld}, torch::TensorOptions().dtype(torch::kByte).device(rank_device));
  const auto* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);

  rt::MemorySample sample;
  c10::DeviceIndex before = -1;
  c10::DeviceIndex after = -1;
  std::thread sampler([&] {
    before = cuda->getDevice().index();
    sample = rt::sample_memory({rank_device, true, "cuda"});
    after = cuda->getDevice().index();
  });
  sampler.join();
  EXPECT_EQ(after, before) << "sampling changed the sampling thread's current device";

  // The device's own figures, asked on a thread that made it current itself.
  std::optional<rt::cuda_backend::CardBytes> card;
  std::thread reference([&] {
    const c10::DeviceGuard on_rank_device(rank_device);
    card = rt::cuda_backend::memory_queries().current_card_bytes();
  });
  reference.join();
  ASSERT_TRUE(card.has_value()) << "the driver gave no memory figures for cuda:" << static_cast<int>(device);
  EXPECT_EQ(sample.total_bytes, card->total);
  // Nothing of this process was allocated in between; other processes may have been.
  EXPECT_NEAR(static_cast<double>(sample.device_used_bytes), static_cast<double>(card->total - card->free),
              static_cast<double>(kHeld) / 2);
  EXPECT_GE(sample.device_used_bytes, kHeld);
  EXPECT_GE(sample.current_bytes, kHeld);
  EXPECT_EQ(held.device(), rank_device);
}

// task=segment reduces the scores on the GPU and brings back only a byte a pixel (and,
// when written, the probability): the same classes as the host computes, on the device,
// and nothing but the classes without segment_probability.
TEST_F(Cuda, SegmentationReducesScoresOnTheDevice) {
  // The tuple's tensors; the IValue holding the tuple goes with the call.
  const auto parts = [](const torch::IValue& tuple) {
    std::vector<torch::IValue> elements;
    for (const auto& element : tuple.toTupleRef().elements()) elements.push_back(element);
    return elements;
  };
  torch::manual_seed(0);
  for (const std::int64_t classes : {5, 1}) {
    SCOPED_TRACE(classes == 1 ? "one logit" : "five classes");
    const auto scores = torch::randn({2, classes, 32, 32});
    const auto on_gpu = parts(rt::segment_pixels(scores.cuda(), true));
    ASSERT_EQ(on_gpu.size(), 2U);
    const auto gpu_classes = on_gpu[0].toTensor();
    const auto gpu_probabilities = on_gpu[1].toTensor();
    EXPECT_TRUE(gpu_classes.is_cuda());
    EXPECT_EQ(gpu_classes.scalar_type(), torch::kUInt8);
    EXPECT_EQ(gpu_classes.sizes(), (std::vector<std::int64_t>{2, 32, 32}));
    EXPECT_TRUE(gpu_probabilities.is_cuda());
    EXPECT_EQ(gpu_probabilities.scalar_type(), torch::kFloat);
    const auto on_host = parts(rt::segment_pixels(scores, true));
    EXPECT_TRUE(torch::equal(gpu_classes.cpu(), on_host[0].toTensor()));
    EXPECT_TRUE(torch::allclose(gpu_probabilities.cpu(), on_host[1].toTensor(), 1e-4, 1e-6));
    EXPECT_TRUE(parts(rt::segment_pixels(scores.cuda(), false))[1].isNone()) << "no probabilities unless written";
    // A model run in fp16 gives fp16 scores: reduced in fp32 all the same.
    EXPECT_EQ(parts(rt::segment_pixels(scores.cuda().to(torch::kHalf), true))[1].toTensor().scalar_type(),
              torch::kFloat);
  }
}

}  // namespace
