#pragma once
// Raw Byte batches scaled where the model runs: a tile travels as its 8-bit samples (a
// quarter of float32's bytes, over PCIe and in every queue) and becomes the model's
// float32 values on the device, (raw * scale - mean) / std per band folded into a gain
// and an offset, with the pixels its valid mask clears set to 0, as the readers' own
// conversion does (source/tile_source.hpp).
#include <torch/types.h>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

class RawScaler {
 public:
  RawScaler(const RawScaling& scaling, torch::Device device);

  // `raw`: [B, C, H, W] uint8 on the scaler's device; `valid`: [B, H, W] uint8 there, or
  // undefined when every pixel is valid. Runs on the device's current stream.
  [[nodiscard]] torch::Tensor operator()(const torch::Tensor& raw, const torch::Tensor& valid) const;

 private:
  torch::Tensor gain_;  // [1, C, 1, 1] float32 on the device
  torch::Tensor offset_;
};

}  // namespace mgpr::runtime
