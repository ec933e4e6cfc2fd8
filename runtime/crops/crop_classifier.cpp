#include "crops/crop_classifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
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

// The pixels a box covers (corners rounded outwards) and `margin` on every side, cut at
// `width` x `height` (the tile's edge, or the raster's where it comes first): [x1, x2) x
// [y1, y2) in the tile; empty when the box misses the tile.
struct CropWindow {
  std::int64_t x1 = 0;
  std::int64_t y1 = 0;
  std::int64_t x2 = 0;
  std::int64_t y2 = 0;
};

std::optional<CropWindow> crop_window(const Box& box, double margin, std::int64_t width, std::int64_t height) {
  const CropWindow window{std::clamp(static_cast<std::int64_t>(std::floor(box.x1 - margin)), std::int64_t{0}, width),
                          std::clamp(static_cast<std::int64_t>(std::floor(box.y1 - margin)), std::int64_t{0}, height),
                          std::clamp(static_cast<std::int64_t>(std::ceil(box.x2 + margin)), std::int64_t{0}, width),
                          std::clamp(static_cast<std::int64_t>(std::ceil(box.y2 + margin)), std::int64_t{0}, height)};
  if (window.x2 <= window.x1 || window.y2 <= window.y1) return std::nullopt;
  return window;
}

// A box's crop in its raster, when it reaches past its tile's `window` into the raster
// (`raster`: its size): the box's pixels and margin, corners rounded outwards, cut at
// the raster's edges. None when the crop lies in the tile (cut from the batch), misses
// the raster, or is larger than a tile (`side`: read into a tile's buffer, it is cut at
// the tile's edge instead).
std::optional<PixelWindow> window_past_tile(const Box& box, double margin, const PixelWindow& window,
                                            CropReads::Size raster, int side) {
  const auto clamp = [](double value, int offset, int extent) {
    return static_cast<int>(std::clamp(value + offset, 0.0, static_cast<double>(extent)));
  };
  const int x1 = clamp(std::floor(box.x1 - margin), window.x, raster.width);
  const int y1 = clamp(std::floor(box.y1 - margin), window.y, raster.height);
  const int x2 = clamp(std::ceil(box.x2 + margin), window.x, raster.width);
  const int y2 = clamp(std::ceil(box.y2 + margin), window.y, raster.height);
  const bool in_tile =
      x1 >= window.x && y1 >= window.y && x2 <= window.x + window.width && y2 <= window.y + window.height;
  if (x2 <= x1 || y2 <= y1 || in_tile || x2 - x1 > side || y2 - y1 > side) return std::nullopt;
  return PixelWindow{x1, y1, x2 - x1, y2 - y1};
}

// Where each of the S x S input pixels of each crop samples the tile, as grid_sample's
// coordinates over the whole tile ([k, S, S, 2], x then y, on `device`): the source
// positions of upsample_bilinear2d without align_corners, (i + 0.5) * crop / S - 0.5,
// held inside the crop, so that sampling the tile gives each crop resized on its own
// (bilinear, the aspect ratio not kept) and all of a tile's crops in one call.
torch::Tensor sampling_grid(std::span<const CropWindow> windows, std::int64_t width, std::int64_t height,
                            std::int64_t side, const torch::Device& device) {
  const auto count = static_cast<std::int64_t>(windows.size());
  std::vector<double> starts_x;
  std::vector<double> starts_y;
  std::vector<double> sizes_x;
  std::vector<double> sizes_y;
  for (const auto& window : windows) {
    starts_x.push_back(static_cast<double>(window.x1));
    starts_y.push_back(static_cast<double>(window.y1));
    sizes_x.push_back(static_cast<double>(window.x2 - window.x1));
    sizes_y.push_back(static_cast<double>(window.y2 - window.y1));
  }
  const auto column = [&](const std::vector<double>& values) {
    return torch::tensor(values, torch::kDouble).reshape({count, 1});
  };
  const auto steps = (torch::arange(side, torch::kDouble) + 0.5).reshape({1, side});
  // One axis: [k, S] positions in the tile's pixels, then grid_sample's [-1, 1] (pixel
  // p's centre is at (2p + 1) / extent - 1 without align_corners).
  const auto axis = [&](const std::vector<double>& starts, const std::vector<double>& sizes, std::int64_t extent) {
    const auto size = column(sizes);
    const auto inside = torch::minimum(torch::clamp_min(steps * size / static_cast<double>(side) - 0.5, 0.0), size - 1);
    return ((column(starts) + inside) * 2 + 1) / static_cast<double>(extent) - 1;
  };
  const auto x = axis(starts_x, sizes_x, width).to(device, torch::kFloat);
  const auto y = axis(starts_y, sizes_y, height).to(device, torch::kFloat);
  return torch::stack({x.unsqueeze(1).expand({count, side, side}), y.unsqueeze(2).expand({count, side, side})}, 3);
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

torch::Tensor CropClassifier::classifier_values(const torch::Tensor& tile, const torch::Tensor& valid) const {
  // Without waiting: the batch's host input stays as it is until the consumer returns,
  // and classify() waits for the device before it does. A window read from the raster
  // is in pageable memory, which CUDA has copied from by the time the copy returns.
  const auto on_device = torch::TensorOptions().device(device_.device);
  auto pixels = tile.unsqueeze(0).to(on_device, /*non_blocking=*/true);
  if (raw_) {
    // The detector's values first, as the raw scaler makes them on the device: a missing
    // pixel is 0.
    pixels = pixels.to(torch::kInt);
    if (*raw_ == RawSample::kUInt16) pixels = torch::bitwise_and(pixels, 0xFFFF);
    pixels = pixels.to(torch::kFloat) * raw_gain_ + raw_offset_;
    if (valid.defined()) {
      pixels = pixels * valid.to(on_device, /*non_blocking=*/true).to(torch::kFloat).unsqueeze(0).unsqueeze(0);
    }
  } else {
    pixels = pixels.to(torch::kFloat);
  }
  return pixels * gain_ + offset_;
}

std::optional<std::pair<torch::Tensor, torch::Tensor>> CropClassifier::read_window(const Tile& tile,
                                                                                   const PixelWindow& window) {
  try {
    reads_.reader->read(Tile{tile.id, window}, read_);
  } catch (const std::runtime_error& refused) {
    // The tile itself was read moments ago: a crop the raster refuses now (after the
    // reader's own retries) costs its context past the tile, not the run.
    if (!read_refused_) {
      fmt::print(stderr,
                 "mgpr: warning: a crop reaching past its tile could not be read from the raster ({}); such crops "
                 "are cut at their tile's edge\n",
                 refused.what());
    }
    read_refused_ = true;
    return std::nullopt;
  }
  const std::vector<std::int64_t> shape{read_.channels, read_.height, read_.width};
  auto samples = read_.bytes.empty()
                     ? torch::from_blob(read_.pixels.data(), shape, torch::kFloat)
                     : torch::from_blob(read_.bytes.data(), shape,
                                        read_.raw_sample == RawSample::kUInt8 ? torch::kByte : torch::kShort);
  torch::Tensor valid;
  if (!read_.valid.empty()) {
    valid = torch::from_blob(read_.valid.data(), {read_.height, read_.width}, torch::kByte)
                .slice(0, 0, window.height)
                .slice(1, 0, window.width);
  }
  return std::pair{samples.slice(1, 0, window.height).slice(2, 0, window.width), valid};
}

CropClassifier::Answers CropClassifier::run(std::vector<torch::Tensor>& crops) {
  const auto logits = model_.forward(torch::cat(crops, 0)).toTensor().to(torch::kFloat);
  crops.clear();
  auto [scores, labels] = torch::softmax(logits, 1).max(1);
  return {std::move(labels), std::move(scores)};
}

std::vector<std::vector<CropClass>> CropClassifier::classify(const BatchInput& input,
                                                             std::span<const std::vector<Box>> boxes,
                                                             std::span<const TileData> tiles) {
  const torch::InferenceMode inference;
  const auto& samples = input.samples;
  const auto height = samples.size(2);
  const auto width = samples.size(3);
  const auto side = static_cast<std::int64_t>(options_.model.tile_size);
  const auto batch = static_cast<std::size_t>(options_.batch_size);
  std::vector<std::vector<CropClass>> classes(boxes.size());
  std::vector<torch::Tensor> crops;  // resized, [n, C, S, S] each, not yet classified
  std::size_t waiting = 0;           // crops in `crops`
  std::vector<CropClass*> answers;   // one per crop, in the order they were cut
  std::vector<torch::Tensor> labels;
  std::vector<torch::Tensor> scores;
  const auto classify_waiting = [&] {
    if (waiting == 0) return;
    auto answered = run(crops);
    labels.push_back(std::move(answered.labels));
    scores.push_back(std::move(answered.scores));
    waiting = 0;
  };
  // The crops `windows` of `values` (a tile's, or a window read from the raster, [1, C,
  // h, w] on the device), whose classes go to `to`: in pieces that fill the batch being
  // made, so no grid or resized piece is larger than a batch.
  const auto cut = [&](const torch::Tensor& values, std::span<const CropWindow> windows,
                       std::span<CropClass* const> to) {
    for (std::size_t first = 0; first < windows.size();) {
      const auto count = std::min(windows.size() - first, batch - waiting);
      const auto grid =
          sampling_grid(windows.subspan(first, count), values.size(3), values.size(2), side, device_.device);
      // Bilinear, zeros outside the tile (never sampled: the grid stays inside the crop),
      // without align_corners, as upsample_bilinear2d.
      crops.push_back(torch::grid_sampler(values.expand({static_cast<std::int64_t>(count), -1, -1, -1}), grid,
                                          /*interpolation_mode=*/0, /*padding_mode=*/0, /*align_corners=*/false));
      answers.insert(answers.end(), to.begin() + static_cast<std::ptrdiff_t>(first),
                     to.begin() + static_cast<std::ptrdiff_t>(first + count));
      waiting += count;
      first += count;
      if (waiting == batch) classify_waiting();
    }
  };
  for (std::size_t tile = 0; tile < boxes.size(); ++tile) {
    classes[tile].resize(boxes[tile].size());
    // With the tile's place known, crops stop at the raster's edge and those that reach
    // past the tile into the raster are read from it.
    const Tile* placed = reads_.reader && tile < tiles.size() ? &tiles[tile].tile : nullptr;
    auto limit_x = width;
    auto limit_y = height;
    CropReads::Size raster;
    if (placed != nullptr) {
      raster = reads_.rasters.at(static_cast<std::size_t>(placed->id.image));
      limit_x = std::min<std::int64_t>(width, raster.width - placed->window.x);
      limit_y = std::min<std::int64_t>(height, raster.height - placed->window.y);
    }
    std::vector<CropWindow> windows;
    std::vector<CropClass*> tile_answers;
    std::vector<std::pair<std::size_t, PixelWindow>> past_tile;  // boxes whose crops are read, and where
    const auto cut_from_tile = [&](std::size_t i) {
      if (const auto window = crop_window(boxes[tile][i], options_.margin, limit_x, limit_y)) {
        windows.push_back(*window);
        tile_answers.push_back(&classes[tile][i]);
      }
    };
    for (std::size_t i = 0; i < boxes[tile].size(); ++i) {
      const auto window = placed == nullptr ? std::nullopt
                                            : window_past_tile(boxes[tile][i], options_.margin, placed->window, raster,
                                                               static_cast<int>(std::min(width, height)));
      if (window) {
        past_tile.emplace_back(i, *window);
      } else {
        cut_from_tile(i);
      }
    }
    for (const auto& [i, window] : past_tile) {
      const auto read = read_window(*placed, window);
      if (!read) {
        cut_from_tile(i);  // the raster refused the read: cut at the tile's edge, as without reads
        continue;
      }
      const CropWindow whole{0, 0, window.width, window.height};
      CropClass* const answer = &classes[tile][i];
      cut(classifier_values(read->first, read->second), std::span(&whole, 1), std::span(&answer, 1));
    }
    if (!windows.empty()) {
      const auto row = static_cast<std::int64_t>(tile);
      cut(classifier_values(samples[row], input.valid.defined() ? input.valid[row] : torch::Tensor()), windows,
          tile_answers);
    }
  }
  classify_waiting();
  if (answers.empty()) return classes;
  // One wait for the device, at the end, rather than one a batch of crops.
  const auto host_labels = torch::cat(labels).to(torch::kCPU, torch::kLong);
  const auto host_scores = torch::cat(scores).to(torch::kCPU, torch::kDouble);
  const auto* label = host_labels.data_ptr<std::int64_t>();
  const auto* score = host_scores.data_ptr<double>();
  for (std::size_t i = 0; i < answers.size(); ++i) *answers[i] = {label[i], score[i]};
  return classes;
}

std::unique_ptr<CropClassifier> make_crop_classifier(const CropClassifierOptions& options, const DeviceChoice& device,
                                                     std::span<const ExecutionPlan> plans, const TileSource& source) {
  auto classifier = std::make_unique<CropClassifier>(options, device, source.channels(), plans, source.raw_scaling());
  if (!source.rasters().empty()) {
    CropReads reads{source.open_reader(), {}};
    for (const auto& raster : source.rasters()) reads.rasters.push_back({raster.width, raster.height});
    classifier->read_past_tiles(std::move(reads));
  }
  return classifier;
}

}  // namespace mgpr::runtime
