#include "tasks/crop_classifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

// [C] float32 as [1, C, 1, 1] on `device`, to scale a [N, C, H, W] batch band by band.
torch::Tensor per_band(const std::vector<float>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kFloat).reshape({1, -1, 1, 1}).to(device);
}

// `values` for `bands` bands: one per band, one for all, or none (`otherwise`).
std::vector<double> per_band_values(const std::vector<double>& values, std::size_t bands, double otherwise,
                                    const std::string& what) {
  if (auto expanded = values_per_band(values, bands, otherwise)) return *std::move(expanded);
  throw UsageError(fmt::format("{} gives {} values for tiles of {} bands; give one per band or one for all", what,
                               values.size(), bands));
}

// The classifier, checked on one crop of its input side; a refusal names it as the crop
// classifier, since the model's own message speaks of tiles.
TileModel load_classifier(const ModelOptions& options, const DeviceChoice& device, int channels,
                          std::span<const ExecutionPlan> plans) {
  try {
    return TileModel(options, device, channels, plans);
  } catch (const UsageError& refused) {
    throw UsageError(fmt::format("classify_model={}, the crop classifier, on crops of {} px ({}'s tile_size): {}",
                                 options.model, options.tile_size, options.card_name, refused.what()));
  }
}

}  // namespace

CropClassifier::CropClassifier(CropClassifierOptions options, const DeviceChoice& device, int channels,
                               std::span<const ExecutionPlan> plans, std::optional<RawScaling> raw)
    : options_(std::move(options)), device_(device), model_(load_classifier(options_.model, device, channels, plans)) {
  const auto bands = static_cast<std::size_t>(channels);
  const auto from_mean = per_band_values(options_.detector_mean, bands, 0.0, "mean");
  const auto from_std = per_band_values(options_.detector_std, bands, 1.0, "std");
  const auto card = fmt::format("the model card of classify_model={}", options_.model.model);
  const auto to_mean = per_band_values(options_.mean, bands, 0.0, "mean= of " + card);
  const auto to_std = per_band_values(options_.std, bands, 1.0, "std= of " + card);
  // value = (s - m1) / d1 with s = raw * scale; the classifier's is (s - m2) / d2.
  std::vector<float> gain;
  std::vector<float> offset;
  for (std::size_t band = 0; band < bands; ++band) {
    gain.push_back(static_cast<float>(from_std[band] / to_std[band]));
    offset.push_back(static_cast<float>((from_mean[band] - to_mean[band]) / to_std[band]));
  }
  gain_ = per_band(gain, device.device);
  offset_ = per_band(offset, device.device);
  if (raw) {
    raw_ = raw->sample;
    raw_gain_ = per_band(raw->gain, device.device);
    raw_offset_ = per_band(raw->offset, device.device);
  }
  const auto& output = model_.dummy_output();
  if (!output.isTensor() || output.toTensor().dim() != 2 || output.toTensor().size(0) != 1) {
    throw UsageError(fmt::format(
        "classify_model={}: a crop classifier returns one row of class logits per crop ([N, classes]); for one "
        "crop of {} px it returned {}",
        options_.model.model, options_.model.tile_size,
        output.isTensor() ? fmt::format("a tensor of {} dimensions", output.toTensor().dim()) : output.tagKind()));
  }
  const auto classes = static_cast<std::size_t>(output.toTensor().size(1));
  if (!options_.class_names.empty() && options_.class_names.size() != classes) {
    throw UsageError(fmt::format("classify_model={}: its card names {} classes and the model gives {} logits",
                                 options_.model.model, options_.class_names.size(), classes));
  }
}

torch::Tensor CropClassifier::crop(const torch::Tensor& tile, const Box& box) const {
  const auto height = tile.size(1);
  const auto width = tile.size(2);
  const auto margin = static_cast<double>(options_.margin);
  // The pixels the box covers (corners truncated outwards) and the margin, in the tile.
  const auto x1 = std::clamp(static_cast<std::int64_t>(std::floor(box.x1 - margin)), std::int64_t{0}, width);
  const auto y1 = std::clamp(static_cast<std::int64_t>(std::floor(box.y1 - margin)), std::int64_t{0}, height);
  const auto x2 = std::clamp(static_cast<std::int64_t>(std::ceil(box.x2 + margin)), std::int64_t{0}, width);
  const auto y2 = std::clamp(static_cast<std::int64_t>(std::ceil(box.y2 + margin)), std::int64_t{0}, height);
  if (x2 <= x1 || y2 <= y1) return {};
  auto pixels = tile.slice(1, y1, y2).slice(2, x1, x2).unsqueeze(0).to(device_.device);
  if (raw_) {
    // The detector's values first, as the raw scaler makes them on the device.
    pixels = pixels.to(torch::kInt);
    if (*raw_ == RawSample::kUInt16) pixels = torch::bitwise_and(pixels, 0xFFFF);
    pixels = pixels.to(torch::kFloat) * raw_gain_ + raw_offset_;
  } else {
    pixels = pixels.to(torch::kFloat);
  }
  pixels = pixels * gain_ + offset_;
  const auto side = static_cast<std::int64_t>(options_.model.tile_size);
  return torch::upsample_bilinear2d(pixels, {side, side}, false);
}

void CropClassifier::run(std::vector<torch::Tensor>& crops, std::vector<CropClass*>& answers) {
  if (crops.empty()) return;
  const auto logits = model_.forward(torch::cat(crops, 0)).toTensor().to(torch::kFloat);
  const auto [scores, labels] = torch::softmax(logits, 1).max(1);
  const auto host_scores = scores.to(torch::kCPU).to(torch::kDouble);
  const auto host_labels = labels.to(torch::kCPU).to(torch::kLong);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    answers[i]->label = host_labels[static_cast<std::int64_t>(i)].item<std::int64_t>();
    answers[i]->score = host_scores[static_cast<std::int64_t>(i)].item<double>();
  }
  crops.clear();
  answers.clear();
}

std::vector<std::vector<CropClass>> CropClassifier::classify(const torch::Tensor& inputs,
                                                             std::span<const std::vector<Box>> boxes) {
  const torch::InferenceMode inference;
  std::vector<std::vector<CropClass>> classes(boxes.size());
  std::vector<torch::Tensor> crops;
  std::vector<CropClass*> answers;
  for (std::size_t tile = 0; tile < boxes.size(); ++tile) {
    classes[tile].resize(boxes[tile].size());
    const auto pixels = inputs[static_cast<std::int64_t>(tile)];
    for (std::size_t i = 0; i < boxes[tile].size(); ++i) {
      auto resized = crop(pixels, boxes[tile][i]);
      if (!resized.defined()) continue;
      crops.push_back(std::move(resized));
      answers.push_back(&classes[tile][i]);
      if (static_cast<int>(crops.size()) == options_.batch_size) run(crops, answers);
    }
  }
  run(crops, answers);
  return classes;
}

}  // namespace mgpr::runtime
