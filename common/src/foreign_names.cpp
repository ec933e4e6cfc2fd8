#include "foreign_names.hpp"

#include <algorithm>
#include <array>

namespace mgpr {
namespace {

struct KeyAlias {
  std::string_view foreign;
  ForeignName name;
};

constexpr std::string_view kLightning = "Lightning's Trainer";
constexpr std::string_view kMultigpuRaster = "multigpu_raster";
constexpr std::string_view kDeepForest = "DeepForest";

constexpr std::array kKeyAliases{
    KeyAlias{"input_path", {"image_path", kMultigpuRaster}},
    KeyAlias{"image", {"image_path", kMultigpuRaster}},
    KeyAlias{"raster_path", {"image_path", kDeepForest}},
    KeyAlias{"path", {"image_path", kDeepForest}},
    KeyAlias{"devices", {"gpus", kLightning}},
    KeyAlias{"num_gpus", {"gpus", kMultigpuRaster}},
    KeyAlias{"n_gpus", {"gpus", kMultigpuRaster}},
    KeyAlias{"num_nodes", {"mgpr-submit --nodes", kLightning}},
    KeyAlias{"num_workers", {"workers", kLightning}},
    KeyAlias{"patch_size", {"tile_size", kDeepForest}},
    KeyAlias{"window_size", {"tile_size", kMultigpuRaster}},
    KeyAlias{"patch_overlap", {"overlap (in pixels: patch_overlap x patch_size)", kDeepForest}},
    KeyAlias{"thresh", {"score_threshold", kDeepForest}},
    KeyAlias{"score_thresh", {"score_threshold", kDeepForest}},
    KeyAlias{"nms_thresh", {"iou_threshold", kDeepForest}},
    KeyAlias{"checkpoint", {"model (a TorchScript file; see docs/models.md)", kLightning}},
    KeyAlias{"ckpt_path", {"model (a TorchScript file; see docs/models.md)", kLightning}},
    KeyAlias{"model_path", {"model", kMultigpuRaster}},
    KeyAlias{"output_path", {"output_dir", kMultigpuRaster}},
    KeyAlias{"save_dir", {"output_dir", kDeepForest}},
    KeyAlias{"out_dir", {"output_dir", kMultigpuRaster}},
};

struct ValueAlias {
  std::string_view key;
  std::string_view foreign;
  ForeignName name;
};

constexpr std::array kValueAliases{
    ValueAlias{"precision", "16-mixed", {"fp16", kLightning}},
    ValueAlias{"precision", "16", {"fp16", kLightning}},
    ValueAlias{"precision", "16-true", {"fp16", kLightning}},
    ValueAlias{"precision", "bf16-mixed", {"bf16", kLightning}},
    ValueAlias{"precision", "bf16-true", {"bf16", kLightning}},
    ValueAlias{"precision", "32", {"fp32", kLightning}},
    ValueAlias{"precision", "32-true", {"fp32", kLightning}},
    ValueAlias{"accelerator", "cuda", {"gpu", kLightning}},
};

}  // namespace

std::optional<ForeignName> foreign_key(std::string_view key) {
  const auto* found =
      std::find_if(kKeyAliases.begin(), kKeyAliases.end(), [&](const KeyAlias& alias) { return alias.foreign == key; });
  if (found == kKeyAliases.end()) return std::nullopt;
  return found->name;
}

std::optional<ForeignName> foreign_value(std::string_view key, std::string_view value) {
  const auto* found = std::find_if(kValueAliases.begin(), kValueAliases.end(),
                                   [&](const ValueAlias& alias) { return alias.key == key && alias.foreign == value; });
  if (found == kValueAliases.end()) return std::nullopt;
  return found->name;
}

}  // namespace mgpr
