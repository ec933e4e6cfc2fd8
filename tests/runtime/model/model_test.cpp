// The model stage with TorchScript models the test builds itself (no Python, nothing
// downloaded): loading, the shape check on a dummy tile, precision rules, and errors.
#include "model/model.hpp"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>

#include "mgpr/error.hpp"
#include "model/builtin_model.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"
#include "support/tile_mean_model.hpp"

namespace {

namespace fs = std::filesystem;
namespace rt = mgpr::runtime;

using mgpr::test::error_of;
using mgpr::test::save_tile_mean_model;

fs::path scratch_dir() { return mgpr::test::program_temp_dir().path(); }

using mgpr::Precision;

const rt::DeviceChoice kCpu{};

// The keys a run plan turns into the model's options and its execution plans.
struct ModelRequest {
  std::string model;
  int tile_size = 0;
  Precision precision = Precision::kAuto;
  bool force_precision = false;
  bool channels_last = true;
};

ModelRequest config_for(const std::string& model, int tile_size) { return {model, tile_size}; }

// As the run plan does on a CPU: the execution policy on this machine's facts, then the model.
rt::TileModel load(const ModelRequest& request, int channels) {
  const auto plans = rt::plan_execution({request.precision, request.force_precision, request.channels_last},
                                        rt::execution_facts(kCpu));
  return rt::TileModel({request.model, {}, request.tile_size}, kCpu, channels, plans);
}

TEST(Model, SavedTorchScriptGivesExactOutputs) {
  const auto file = save_tile_mean_model(scratch_dir());
  auto model = load(config_for(file.string(), 8), 3);
  const auto batch = torch::arange(2 * 3 * 8 * 8, torch::kFloat).reshape({2, 3, 8, 8});
  const auto output = model.forward(batch).toTensor();
  ASSERT_EQ(output.sizes(), (std::vector<std::int64_t>{2, 2}));
  const double first_mean = (0 + 191) / 2.0;
  const double second_mean = (192 + 383) / 2.0;
  EXPECT_NEAR(output[0][0].item<double>(), first_mean, 1e-3);
  EXPECT_NEAR(output[1][0].item<double>(), second_mean, 1e-3);
  EXPECT_NEAR(output[1][1].item<double>(), -second_mean, 1e-3);
}

TEST(Model, BuiltinResNet50IsDeterministicAndClassifies) {
  auto config = config_for("builtin:resnet50", 64);
  config.precision = Precision::kFp32;
  auto first = load(config, 3);
  auto second = load(config, 3);
  const auto batch = torch::rand({2, 3, 64, 64});
  const auto a = first.forward(batch).toTensor();
  const auto b = second.forward(batch).toTensor();
  ASSERT_EQ(a.sizes(), (std::vector<std::int64_t>{2, 1000}));
  EXPECT_TRUE(torch::allclose(a, b));
  EXPECT_TRUE(torch::isfinite(a).all().item<bool>());
  EXPECT_NE(first.description().find("optimised for inference"), std::string::npos) << first.description();
}

TEST(Model, BuiltinTakesTheSelectedBandCount) {
  auto four_bands = load(config_for("builtin:resnet50", 32), 4);
  EXPECT_EQ(four_bands.forward(torch::rand({1, 4, 32, 32})).toTensor().size(1), 1000);
}

TEST(Model, MissingModelIsNamed) {
  const auto message = error_of([] { (void)load(config_for("/nonexistent/model.pt", 8), 3); });
  EXPECT_NE(message.find("'/nonexistent/model.pt' does not exist"), std::string::npos) << message;
}

TEST(Model, UnknownBuiltinIsNamed) {
  const auto message = error_of([] { (void)load(config_for("builtin:vgg", 8), 3); });
  EXPECT_NE(message.find("builtin:vgg"), std::string::npos) << message;
  EXPECT_NE(message.find("builtin:resnet50"), std::string::npos) << message;
}

TEST(Model, TextFileIsNotTorchScript) {
  const auto file = scratch_dir() / "notes.pt";
  std::ofstream(file) << "this is not a model\n";
  const auto message = error_of([&] { (void)load(config_for(file.string(), 8), 3); });
  EXPECT_NE(message.find("cannot be loaded as TorchScript"), std::string::npos) << message;
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
}

TEST(Model, WrongInputShapeIsReportedBeforeAnyTile) {
  // A model for 4-band input, fed 3 bands.
  torch::jit::Module module("FourBands");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.register_parameter("w", torch::ones({1, 4, 1, 1}), false);
  module.define("def forward(self, x):\n    return torch.flatten(torch.conv2d(x, self.w), 1)\n");
  const auto file = scratch_dir() / "four_bands.pt";
  module.save(file.string());
  const auto message = error_of([&] { (void)load(config_for(file.string(), 16), 3); });
  EXPECT_NE(message.find("fails on a tile of shape [1, 3, 16, 16]"), std::string::npos) << message;
  EXPECT_NE(message.find("check tile_size and bands"), std::string::npos) << message;
}

// Every model failure was explained as "check tile_size and bands", even one
// that has nothing to do with the input's shape. The hint now follows the failure.
TEST(Model, AFailureUnrelatedToTheShapeGetsNoShapeHint) {
  torch::jit::Module module("Refuses");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(R"(
def forward(self, x):
    return x + torch.linalg_cholesky(torch.zeros([2, 2])).sum()
)");
  const auto file = scratch_dir() / "refuses.pt";
  module.save(file.string());
  const auto message = error_of([&] { (void)load(config_for(file.string(), 16), 3); });
  EXPECT_NE(message.find("positive-definite"), std::string::npos) << message;
  EXPECT_EQ(message.find("check tile_size and bands"), std::string::npos) << message;
  EXPECT_NE(message.find("the model's own error"), std::string::npos) << message;
}

TEST(Model, Fp16OnCpuIsRefusedUnlessForced) {
  auto config = config_for(save_tile_mean_model(scratch_dir()).string(), 8);
  config.precision = Precision::kFp16;
  const auto message = error_of([&] { (void)load(config, 3); });
  EXPECT_NE(message.find("precision=fp16"), std::string::npos) << message;
  EXPECT_NE(message.find("force_precision=true"), std::string::npos) << message;
  config.precision = Precision::kBf16;
  config.force_precision = true;
  auto forced = load(config, 3);
#if TORCH_VERSION_MAJOR >= 2
  // Autocast: the weights stay fp32 and a mean is one of the operators it keeps in fp32.
  EXPECT_TRUE(forced.uses_autocast());
  EXPECT_EQ(forced.forward(torch::ones({1, 3, 8, 8})).toTensor().scalar_type(), torch::kFloat);
#else
  EXPECT_FALSE(forced.uses_autocast());
  EXPECT_EQ(forced.forward(torch::ones({1, 3, 8, 8})).toTensor().scalar_type(), torch::kBFloat16);
#endif
}

// The test's own reading of /proc/cpuinfo, not the runtime's: whether precision=auto
// should choose bf16 here.
bool cpu_computes_bf16() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      line += ' ';
      return line.find(" avx512_bf16 ") != std::string::npos || line.find(" amx_bf16 ") != std::string::npos;
    }
  }
  return false;
}

bool auto_should_choose_bf16() { return TORCH_VERSION_MAJOR >= 2 && cpu_computes_bf16(); }

// One 3x3 convolution with fixed weights (each output pixel the mean of its 3x3x3
// neighbourhood), averaged per tile: bf16 under autocast, with a known fp32 answer.
// With `wants_fp32`, the model refuses a convolution output in another type than its
// fp32 input, as a model with an fp32-only custom operator would.
fs::path save_conv_model(const fs::path& dir, bool wants_fp32) {
  torch::jit::Module module("TileConv");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.register_parameter("weight", torch::full({2, 3, 3, 3}, 1.0 / 27), false);
  module.define(std::string(R"(
def forward(self, x):
    y = torch.conv2d(x, self.weight)
)") +
                (wants_fp32 ? R"(
    assert y.dtype == x.dtype, "this model computes in fp32 only"
)"
                            : "") +
                R"(
    return torch.mean(y, [2, 3])
)");
  const auto file = dir / (wants_fp32 ? "conv-fp32-only.pt" : "conv.pt");
  module.save(file.string());
  return file;
}

TEST(Model, PrecisionAutoSaysWhatItChoseAndWhy) {
  auto config = config_for(save_conv_model(scratch_dir(), false).string(), 16);
  ASSERT_EQ(config.precision, Precision::kAuto) << "auto is the default";
  auto model = load(config, 3);
  const auto& said = model.description();
  if (auto_should_choose_bf16()) {
    EXPECT_NE(said.find("in bf16 (auto: native "), std::string::npos) << said;
    EXPECT_NE(said.find("autocast"), std::string::npos) << said;
    EXPECT_NE(said.find("channels-last"), std::string::npos) << said;
    EXPECT_NE(said.find("frozen"), std::string::npos) << said;
    EXPECT_TRUE(model.uses_autocast());
  } else {
    EXPECT_NE(said.find("in fp32 (auto: "), std::string::npos) << said;
    EXPECT_NE(said.find("optimised for inference"), std::string::npos) << said;
    EXPECT_FALSE(model.uses_autocast());
  }
  EXPECT_TRUE(model.warnings().empty());
}

// channels-last changes only the layout the convolutions read, never the answer.
TEST(Model, Fp32OnACpuRunsChannelsLastUnderLibTorch2WithTheSameAnswer) {
  auto config = config_for(save_conv_model(scratch_dir(), false).string(), 16);
  config.precision = Precision::kFp32;
  auto nhwc = load(config, 3);
  config.channels_last = false;
  auto nchw = load(config, 3);
  const bool expected = TORCH_VERSION_MAJOR >= 2;
  EXPECT_EQ(nhwc.description().find("channels-last") != std::string::npos, expected) << nhwc.description();
  EXPECT_EQ(nchw.description().find("channels-last"), std::string::npos) << nchw.description();
  const auto batch = torch::rand({2, 3, 16, 16});
  const auto nhwc_out = nhwc.forward(batch).toTensor();
  const auto nchw_out = nchw.forward(batch).toTensor();
  ASSERT_EQ(nhwc_out.sizes(), nchw_out.sizes());
  EXPECT_TRUE(torch::allclose(nhwc_out, nchw_out, 1e-5, 1e-6)) << nhwc_out << nchw_out;
}

TEST(Model, PrecisionAutoInBf16StaysCloseToFp32) {
  if (!auto_should_choose_bf16()) {
    GTEST_SKIP() << "precision=auto runs fp32 here (LibTorch " << TORCH_VERSION
                 << ", or a CPU without avx512_bf16/amx_bf16): nothing to compare";
  }
  const auto file = save_conv_model(scratch_dir(), false).string();
  auto exact = config_for(file, 16);
  exact.precision = Precision::kFp32;
  auto automatic = load(config_for(file, 16), 3);
  auto reference = load(exact, 3);
  const auto batch = torch::rand({4, 3, 16, 16});
  const auto got = automatic.forward(batch).toTensor().to(torch::kFloat);
  const auto want = reference.forward(batch).toTensor();
  ASSERT_EQ(got.sizes(), want.sizes());
  // bf16 keeps 8 bits of mantissa: a few parts in a thousand per product.
  EXPECT_TRUE(torch::allclose(got, want, /*rtol=*/2e-2, /*atol=*/2e-3)) << got << want;
}

TEST(Model, PrecisionAutoRunsAModelThatFailsInBf16InFp32AndSaysSo) {
  if (!auto_should_choose_bf16()) {
    GTEST_SKIP() << "precision=auto runs fp32 here (LibTorch " << TORCH_VERSION
                 << ", or a CPU without avx512_bf16/amx_bf16): no bf16 attempt to fall back from";
  }
  auto config = config_for(save_conv_model(scratch_dir(), true).string(), 16);
  auto model = load(config, 3);
  EXPECT_NE(model.description().find("in fp32 (auto: the model fails in bf16)"), std::string::npos)
      << model.description();
  ASSERT_FALSE(model.warnings().empty());
  EXPECT_NE(model.warnings().front().find("this model computes in fp32 only"), std::string::npos)
      << model.warnings().front();
  const auto output = model.forward(torch::ones({1, 3, 16, 16})).toTensor();
  EXPECT_NEAR(output[0][0].item<double>(), 1.0, 1e-5);
  // Asked for by name, bf16 is not replaced: the failure is the answer.
  config.precision = Precision::kBf16;
  EXPECT_NE(error_of([&] { (void)load(config, 3); }).find("this model computes in fp32 only"), std::string::npos);
}

TEST(Model, GpuRequestedWithoutGpuIsRefused) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is present: the refusal cannot be observed";
  EXPECT_NE(error_of([] { rt::choose_device(mgpr::Accelerator::kGpu, 0); }).find("accelerator=cpu"), std::string::npos);
  EXPECT_FALSE(rt::choose_device(mgpr::Accelerator::kAuto, 0).is_cuda);
}

}  // namespace
