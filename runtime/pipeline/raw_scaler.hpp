#pragma once
// Raw batches scaled where the model runs: a tile travels as its 8- or 16-bit samples (a
// quarter or half of float32's bytes, over PCIe and in every queue) and becomes the model's
// float32 values on the device, (raw * scale - mean) / std per band folded into a gain
// and an offset, with the pixels its valid mask clears set to 0, as the readers' own
// conversion does (source/tile_source.hpp).
#include <torch/types.h>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

// The dtype raw samples travel as: uint8 for 8 bits, int16 for 16 bits signed or not
// (LibTorch 1.x has no uint16; the scaler reads UInt16's bits back as unsigned).
constexpr torch::ScalarType raw_dtype(RawSample sample) {
  return sample == RawSample::kUInt8 ? torch::kByte : torch::kShort;
}

class RawScaler {
 public:
  RawScaler(const RawScaling& scaling, torch::Device device);

  // `raw`: [B, C, H, W] on the scaler's device, uint8 for 8-bit samples and int16 for
  // 16-bit ones (UInt16's bits too); `valid`: [B, H, W] uint8 there, or
  // undefined when every pixel is valid. Runs on the device's current stream.
  [[nodiscard]] torch::Tensor operator()(const torch::Tensor& raw, const torch::Tensor& valid) const;

 private:
  torch::Tensor gain_;  // [1, C, 1, 1] float32 on the device
  torch::Tensor offset_;
  RawSample sample_;
};

}  // namespace mgpr::runtime
