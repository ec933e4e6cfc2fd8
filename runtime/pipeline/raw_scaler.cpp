#include "pipeline/raw_scaler.hpp"

#include <stdexcept>

namespace mgpr::runtime {
namespace {

torch::Tensor per_channel(const std::vector<float>& values, torch::Device device) {
  return torch::tensor(values, torch::kFloat).reshape({1, static_cast<std::int64_t>(values.size()), 1, 1}).to(device);
}

}  // namespace

RawScaler::RawScaler(const RawScaling& scaling, torch::Device device)
    : gain_(per_channel(scaling.gain, device)), offset_(per_channel(scaling.offset, device)), sample_(scaling.sample) {
  if (scaling.gain.empty() || scaling.gain.size() != scaling.offset.size()) {
    throw std::invalid_argument("raw scaling needs one gain and one offset per channel");
  }
}

torch::Tensor RawScaler::operator()(const torch::Tensor& raw, const torch::Tensor& valid) const {
  if (raw.scalar_type() != raw_dtype(sample_) || raw.dim() != 4 || raw.size(1) != gain_.size(1)) {
    throw std::logic_error("raw scaling of a batch that is not [B, channels, H, W] of its raw type");
  }
  auto values = raw.to(torch::kFloat);
  // UInt16 travels as int16's bits: -1 is 65535 (exact in float32, as every 17-bit
  // integer is).
  if (sample_ == RawSample::kUInt16) values.remainder_(65536);
  values.mul_(gain_).add_(offset_);
  if (valid.defined()) values.mul_(valid.unsqueeze(1));  // 0 where missing, 1 where valid
  return values;
}

}  // namespace mgpr::runtime
