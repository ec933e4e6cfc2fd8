#include "pipeline/raw_scaler.hpp"

#include <stdexcept>

namespace mgpr::runtime {
namespace {

torch::Tensor per_channel(const std::vector<float>& values, torch::Device device) {
  return torch::tensor(values, torch::kFloat).reshape({1, static_cast<std::int64_t>(values.size()), 1, 1}).to(device);
}

}  // namespace

RawScaler::RawScaler(const RawScaling& scaling, torch::Device device)
    : gain_(per_channel(scaling.gain, device)), offset_(per_channel(scaling.offset, device)) {
  if (scaling.gain.empty() || scaling.gain.size() != scaling.offset.size()) {
    throw std::invalid_argument("raw scaling needs one gain and one offset per channel");
  }
}

torch::Tensor RawScaler::operator()(const torch::Tensor& raw, const torch::Tensor& valid) const {
  if (raw.scalar_type() != torch::kByte || raw.dim() != 4 || raw.size(1) != gain_.size(1)) {
    throw std::logic_error("raw scaling of a batch that is not [B, channels, H, W] uint8");
  }
  auto values = raw.to(torch::kFloat).mul_(gain_).add_(offset_);
  if (valid.defined()) values.mul_(valid.unsqueeze(1));  // 0 where missing, 1 where valid
  return values;
}

}  // namespace mgpr::runtime
