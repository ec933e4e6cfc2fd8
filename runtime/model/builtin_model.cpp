#include "model/builtin_model.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string>

#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

constexpr std::string_view kPrefix = "builtin:";

// Builds the network as TorchScript source plus parameters, rather than with
// torch::nn modules, so built-in and user models share one path: jit::Module,
// optimize_for_inference, the same forward call.
class ScriptBuilder {
 public:
  explicit ScriptBuilder(torch::jit::Module& module) : module_(module) {}

  // One convolution with bias; returns the expression applying it to `input`.
  std::string conv(const std::string& input, int in, int out, int kernel, int stride, int padding, double gain = 1.0) {
    const std::string name = fmt::format("p{}", parameters_++);
    // He initialisation keeps activations in range through the depth without batch norm;
    // `gain` damps the last convolution of each residual branch for the same reason.
    const double scale = gain * std::sqrt(2.0 / (in * kernel * kernel));
    module_.register_parameter(name + "_w", torch::randn({out, in, kernel, kernel}) * scale, false);
    module_.register_parameter(name + "_b", torch::zeros({out}), false);
    return fmt::format("torch.conv2d({}, self.{}_w, self.{}_b, [{},{}], [{},{}])", input, name, name, stride, stride,
                       padding, padding);
  }

  std::string linear(const std::string& input, int in, int out) {
    const std::string name = fmt::format("p{}", parameters_++);
    module_.register_parameter(name + "_w", torch::randn({out, in}) * std::sqrt(1.0 / in), false);
    module_.register_parameter(name + "_b", torch::zeros({out}), false);
    return fmt::format("torch.addmm(self.{}_b, {}, self.{}_w.t())", name, input, name);
  }

  void line(const std::string& text) { source_ += "    " + text + "\n"; }
  [[nodiscard]] const std::string& body() const { return source_; }

 private:
  torch::jit::Module& module_;
  int parameters_ = 0;
  std::string source_;
};

// torchvision's ResNet-50 v1.5: bottlenecks [3, 4, 6, 3], stride on the 3x3 convolution.
std::string resnet50_body(ScriptBuilder& net, int in_channels) {
  net.line("x = torch.relu(" + net.conv("x", in_channels, 64, 7, 2, 3) + ")");
  net.line("x = torch.max_pool2d(x, [3,3], [2,2], [1,1])");
  constexpr std::array kBlocks{3, 4, 6, 3};
  constexpr std::array kWidths{64, 128, 256, 512};
  int channels = 64;
  for (std::size_t layer = 0; layer < kBlocks.size(); ++layer) {
    const int width = kWidths[layer];
    for (int block = 0; block < kBlocks[layer]; ++block) {
      const int stride = (block == 0 && layer > 0) ? 2 : 1;
      net.line("y = torch.relu(" + net.conv("x", channels, width, 1, 1, 0) + ")");
      net.line("y = torch.relu(" + net.conv("y", width, width, 3, stride, 1) + ")");
      net.line("y = " + net.conv("y", width, width * 4, 1, 1, 0, 0.2));
      if (block == 0) {
        net.line("x = torch.relu(y + " + net.conv("x", channels, width * 4, 1, stride, 0) + ")");
      } else {
        net.line("x = torch.relu(y + x)");
      }
      channels = width * 4;
    }
  }
  net.line("x = torch.flatten(torch.adaptive_avg_pool2d(x, [1,1]), 1)");
  net.line("return " + net.linear("x", channels, 1000));
  return net.body();
}

}  // namespace

bool is_builtin_model(std::string_view spec) { return spec.starts_with(kPrefix); }

torch::jit::Module make_builtin_model(std::string_view spec, int in_channels) {
  const auto name = spec.substr(kPrefix.size());
  if (name != "resnet50") {
    throw UsageError(
        fmt::format("model '{}': no such built-in model; the built-in one is builtin:resnet50, "
                    "or give a TorchScript file",
                    spec));
  }
  // Same weights on every rank and every run, so results are comparable.
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  torch::jit::Module module("BuiltinResNet50");
  module.register_attribute("training", c10::BoolType::get(), false);
  ScriptBuilder net(module);
  const std::string body = resnet50_body(net, in_channels);
  module.define("def forward(self, x):\n" + body);
  return module;
}

}  // namespace mgpr::runtime
