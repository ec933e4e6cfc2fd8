#pragma once
// task=detect with classify_model=: a second model classifies every box's crop, with
// crop_margin pixels of context, taken from the tile the box was found in while that tile
// is still in the batch's host input, or read from the raster when the crop reaches past
// that tile (CropReads); resized to the classifier's input on its device (bilinear, the
// aspect ratio not kept, as DeepForest's CropModel does) and classified in batches. A
// tile goes to the device once, and all its crops are cut and resized there in one call;
// the classes come back once per batch of tiles. Each rank classifies the boxes of its
// own tiles before their results leave it, so the labels are journaled with the boxes: a
// resumed run does not classify again, and the merge keeps a label with the copy of a box
// it keeps.
#include <torch/script.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "geometry/box_merge.hpp"
#include "model/model.hpp"
#include "pipeline/pipeline.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// Crops a forward pass on a GPU: a ResNet-50 on 224 px crops classified 1.6 times as many
// a second in batches of 128 as in batches of 32 on an H200 in bf16 (docs/benchmarks.md,
// "Crops classified"); on a CPU a larger batch gains nothing.
inline constexpr int kGpuCropBatch = 128;

// The crop classifier's own options, resolved from classify_model= and its card.
struct CropClassifierOptions {
  ModelOptions model;  // its tile_size: the classifier's input side, from its card
  int margin = 0;      // pixels of context on every side of a box (crop_margin=)
  std::vector<std::string> class_names;
  // Both models see (raw * scale - mean) / std, with one scale: the detector's mean and
  // std, then the classifier's (each one value per band, one for all, or none: 0 and 1).
  std::vector<double> detector_mean;
  std::vector<double> detector_std;
  std::vector<double> mean;
  std::vector<double> std;
  int batch_size = 32;  // crops a forward pass (kGpuCropBatch on a GPU)
};

// The classifier's answer for one box: its class (-1 when the box has no pixel in its
// tile to crop) and that class's softmax probability.
using CropClass = BoxClass;

// Where a crop that reaches past its tile into the raster is read: a reader of the run's
// source, for the one thread that classifies, and each raster's size in the pixels tiles
// are counted in (RasterDescription's width and height).
struct CropReads {
  struct Size {
    int width = 0;
    int height = 0;
  };
  std::unique_ptr<TileReader> reader;
  std::vector<Size> rasters;  // by TileId::image
};

class CropClassifier {
 public:
  // Loads the classifier and checks it on one crop of its input size (a UsageError names
  // it when it refuses that size). `raw`: how raw tiles become the detector's values,
  // when the tiles travel raw (TileSource::raw_scaling).
  CropClassifier(CropClassifierOptions options, const DeviceChoice& device, int channels,
                 std::span<const ExecutionPlan> plans, std::optional<RawScaling> raw);

  // From now on, a crop that reaches past its tile into its raster is read from the
  // raster (classify() given the batch's `tiles`), unless it is larger than a tile.
  void read_past_tiles(CropReads reads) { reads_ = std::move(reads); }

  // For tile i of a batch (`input`: the batch's host input), the classes of boxes[i],
  // given in the tile's pixels. `tiles`: the batch's tiles, their windows in their
  // rasters; without them every crop is cut at its tile's edge.
  std::vector<std::vector<CropClass>> classify(const BatchInput& input, std::span<const std::vector<Box>> boxes,
                                               std::span<const TileData> tiles = {});

  [[nodiscard]] const std::vector<std::string>& class_names() const { return options_.class_names; }

 private:
  // `tile` ([C, H, W] on the host; `valid`, [H, W] uint8, or undefined) as the
  // classifier's values, [1, C, H, W] float32 on its device: one copy and one conversion
  // for every crop of the tile.
  torch::Tensor classifier_values(const torch::Tensor& tile, const torch::Tensor& valid) const;
  // `window` of the raster `tile` lies in, read through reads_ as a tile's samples are
  // ([C, h, w] and its valid mask, on the host, in read_'s buffers); none when the read
  // fails (warned once).
  std::optional<std::pair<torch::Tensor, torch::Tensor>> read_window(const Tile& tile, const PixelWindow& window);
  // The classifier on the crops cut so far in this call, at most a batch of them
  // (emptied): each crop's class and its probability, left on the device so that the
  // next crops are cut while it computes. Nothing outlives the call.
  struct Answers {
    torch::Tensor labels;
    torch::Tensor scores;
  };
  Answers run(std::vector<torch::Tensor>& crops);

  CropClassifierOptions options_;
  DeviceChoice device_;
  std::optional<RawSample> raw_;  // set: the tiles travel raw, this type
  // On the classifier's device, [1, C, 1, 1]: raw samples become the detector's values as
  // raw * raw_gain_ + raw_offset_ (the raw scaler's step), and those the classifier's as
  // value * gain_ + offset_.
  torch::Tensor raw_gain_;
  torch::Tensor raw_offset_;
  torch::Tensor gain_;
  torch::Tensor offset_;
  TileModel model_;
  CropReads reads_;            // no reader: crops are cut at their tile's edge
  TileData read_;              // the last crop read from a raster, its buffers reused
  bool read_refused_ = false;  // a read failed: warned
};

// The run's classifier over `source`'s tiles; crops that reach past their tile are read
// through a reader of its own (the classifier runs on the post-processing thread, not on
// a reader thread).
std::unique_ptr<CropClassifier> make_crop_classifier(const CropClassifierOptions& options, const DeviceChoice& device,
                                                     std::span<const ExecutionPlan> plans, const TileSource& source);

}  // namespace mgpr::runtime
