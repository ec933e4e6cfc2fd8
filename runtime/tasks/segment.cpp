// task=segment: [B, C, H, W] → a class per pixel. Each rank writes the core of every
// tile it processed as a GeoTIFF piece (segment_layout.hpp's rule decides which tile
// owns a pixel), and rank 0 ties the pieces into one VRT per raster. On a GPU the scores
// are reduced to the class (and its probability) there, and only those come back.
#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "mgpr/error.hpp"
#include "resume/stop_request.hpp"
#include "tasks/result_files.hpp"
#include "tasks/task_factories.hpp"
#ifdef MGPR_HAVE_GDAL
#include "geometry/segment_layout.hpp"
#include "tasks/segment_polygons.hpp"
#include "writers/quicklook.hpp"
#include "writers/segment_mosaic.hpp"
#endif

namespace mgpr::runtime {
namespace {

struct PixelResults {
  torch::Tensor classes;        // uint8 [B, H, W]
  torch::Tensor probabilities;  // float32 [B, H, W]
};

// In fp32 whatever the model's precision, on whichever device the scores are: the host
// runs the operations it always ran, so its pieces keep their bytes.
PixelResults classes_and_probabilities(const torch::Tensor& output) {
  const auto scores = output.to(torch::kFloat);
  torch::Tensor classes;
  torch::Tensor probabilities;
  if (scores.size(1) == 1) {
    // One logit: class 1 where it is positive, its probability the sigmoid's side.
    const auto logit = scores.select(1, 0);
    classes = (logit > 0).to(torch::kLong);
    const auto p = torch::sigmoid(logit);
    probabilities = torch::where(logit > 0, p, 1 - p);
  } else {
    std::tie(probabilities, classes) = torch::softmax(scores, 1).max(1);
  }
  return {classes.to(torch::kUInt8), std::move(probabilities)};
}

}  // namespace

torch::IValue segment_pixels(const torch::Tensor& scores, bool with_probability) {
  auto pixels = classes_and_probabilities(scores);
  return c10::ivalue::Tuple::create(
      std::move(pixels.classes), with_probability ? torch::IValue(std::move(pixels.probabilities)) : torch::IValue());
}

#ifdef MGPR_HAVE_GDAL
namespace {

class SegmentOutput final : public TaskOutput {
 public:
  explicit SegmentOutput(const OutputPlan& plan) : plan_(plan) {
    // Once per raster, not per tile: pieces of one raster share its georeferencing.
    for (const auto& raster : plan_.rasters) georefs_.push_back({raster_transform(raster), raster.crs_wkt});
    if (plan_.options.polygons) polygons_.emplace(plan_);
  }

  void check_output(const torch::IValue& output, std::int64_t batch, int tile_size) const override {
    if (!output.isTensor() || output.toTensor().dim() != 4 || output.toTensor().size(0) != batch ||
        output.toTensor().size(2) != tile_size || output.toTensor().size(3) != tile_size) {
      throw UsageError(fmt::format(
          "model '{}' returned {} for a batch of {} tiles of {}x{} px; task=segment needs a [B, C, H, W] tensor of "
          "class scores at the tile's own size (C = 1: one logit, class 1 where it is > 0); see docs/models.md",
          plan_.options.model, describe_output(output), batch, tile_size, tile_size));
    }
    if (output.toTensor().size(1) > kNoClass) {
      throw UsageError(
          fmt::format("model '{}' has {} classes; task=segment writes classes as bytes and takes at "
                      "most {} (value {} means no data)",
                      plan_.options.model, output.toTensor().size(1), int{kNoClass}, int{kNoClass}));
    }
    // One channel is one logit: classes 0 and 1.
    const auto classes = std::max<std::int64_t>(output.toTensor().size(1), 2);
    if (plan_.options.polygons && plan_.options.background_class >= classes) {
      throw UsageError(fmt::format(
          "background_class={} is no class of model '{}', whose classes are 0 to {}: the polygons would leave "
          "nothing out; give the class value of the background (0 for most models), or -1 to make polygons of "
          "every class",
          plan_.options.background_class, plan_.options.model, classes - 1));
    }
  }

  // A score tensor crosses from a GPU at 4 bytes a class a pixel, against 1 for the
  // class and 4 for its probability (written only with segment_probability): reduced
  // there, a batch of 16 tiles of 1024 px with 10 classes brings back 16 MiB (80 with
  // the probabilities) instead of 640. On the host the scores stay whole: encode_batch
  // reduces them on the post-processing thread, beside the next forward pass, as it
  // always did. An output outside the contract stays whole too, for encode_batch's check
  // to name.
  [[nodiscard]] TileModel::OutputReduction device_reduction() const override {
    return [with_probability = with_probability()](const torch::IValue& output) -> torch::IValue {
      if (!output.isTensor()) return output;
      const auto& scores = output.toTensor();
      if (scores.is_cpu() || scores.dim() != 4 || scores.size(1) > kNoClass) return output;
      return segment_pixels(scores, with_probability);
    };
  }

  std::vector<std::string> encode_batch(std::span<const TileData> tiles, const torch::IValue& output,
                                        const BatchInput& /*input*/) override {
    const auto batch = static_cast<std::int64_t>(tiles.size());
    PixelResults pixels;
    if (output.isTuple()) {
      pixels = reduced_on_device(output, batch, tiles.front().height);
    } else {
      check_output(output, batch, tiles.front().height);
      pixels = classes_and_probabilities(output.toTensor().to(torch::kCPU));
    }
    const auto classes = pixels.classes.contiguous();
    const auto probabilities = pixels.probabilities.defined() ? pixels.probabilities.contiguous() : torch::Tensor();
    std::vector<std::string> encoded;
    for (std::int64_t i = 0; i < batch; ++i) {
      encoded.push_back(write_pieces(tiles[static_cast<std::size_t>(i)], classes[i],
                                     probabilities.defined() ? probabilities[i] : torch::Tensor()));
    }
    return encoded;
  }

  [[nodiscard]] const OutputPlan& plan() const override { return plan_; }

  // The pieces are written by the ranks as tiles finish; with its last row the raster
  // gets its mosaic over them, and what is made of it (COG, quicklook) when asked.
  std::int64_t write_row(const RasterRow& row, TileResults::const_iterator first, TileResults::const_iterator last,
                         std::vector<std::filesystem::path>& written) override {
    if (plan_.rasters.empty()) return 0;  // fake data has no raster to lay pieces on
    if (polygons_) polygons_->add_row(row, first, last, kPiece.size() + 1, written);
    if (!row.last) return 0;
    const int image = row.image;
    const auto index = static_cast<std::size_t>(image);
    const auto& raster = plan_.rasters.at(index);
    std::vector<MosaicPiece> classes;
    std::vector<MosaicPiece> probabilities;
    // The run's tiles are in id order, raster by raster: each raster's are one range.
    const auto before = [](const Tile& tile, int wanted) { return tile.id.image < wanted; };
    const auto tiles_first = std::lower_bound(plan_.tiles.begin(), plan_.tiles.end(), image, before);
    const auto tiles_last = std::lower_bound(tiles_first, plan_.tiles.end(), image + 1, before);
    for (const auto& tile : std::span(tiles_first, tiles_last)) {
      const auto core = tile_core(tile, raster.width, raster.height, plan_.tile_size, plan_.options.overlap);
      classes.push_back({existing_piece(class_piece(tile.id)), core});
      if (plan_.options.segment_probability)
        probabilities.push_back({existing_piece(probability_piece(tile.id)), core});
    }
    const auto prefix = plan_.prefixes[index].string();
    const auto grid = write_mosaic(index, prefix + "_segmentation", classes, false);
    written.emplace_back(prefix + "_segmentation.vrt");
    if (plan_.options.segment_probability) {
      write_mosaic(index, prefix + "_probability", probabilities, true);
      written.emplace_back(prefix + "_probability.vrt");
    }
    if (plan_.options.cog) {
      write_cog(prefix + "_segmentation.vrt", prefix + "_segmentation.tif", [] { return stop_signal() != 0; });
      written.emplace_back(prefix + "_segmentation.tif");
    }
    if (plan_.options.quicklook) {
      write_mask_quicklook(
          prefix + "_quicklook.png",
          {raster.path, raster.bands, plan_.options.quicklook_size, grid.width, grid.height, plan_.options.class_names},
          prefix + "_segmentation.vrt");
      written.emplace_back(prefix + "_quicklook.png");
    }
    return static_cast<std::int64_t>(classes.size());
  }

  void abandon_raster(int image) override {
    if (polygons_) polygons_->abandon_raster(image);
  }

  void finish_outputs(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) override {
    // The mosaics stay per raster (one CRS each); the run's vector files list the rasters
    // (beside the polygons, when made).
    if (polygons_) {
      polygons_->finish(outcomes, written);
    } else if (plan_.layout == OutputLayout::kRun) {
      ResultFiles(plan_, "segmentation", {}).finish(outcomes, written);
    }
  }

 private:
  // Writes <name>.vrt, the mosaic of raster `image`'s pieces, and returns its grid. A
  // raster read resampled to the model's resolution has its mosaic on the model's grid;
  // with segment_resolution=raster that one goes into the pieces' folder as
  // model_grid.vrt and <name>.vrt puts it back on the raster's own grid by nearest
  // neighbour, so the classes lie pixel for pixel on the input. A VRT over the pieces
  // rather than a copy: the mosaic stays as cheap to write, and cog=true copies it.
  MosaicGrid write_mosaic(std::size_t image, const std::string& name, std::span<const MosaicPiece> pieces,
                          bool probabilities) const {
    const auto& raster = plan_.rasters[image];
    const auto& georef = georefs_[image];
    const auto& names = plan_.options.class_names;
    const MosaicGrid model{raster.width, raster.height, georef.transform};
    if (!plan_.options.segment_at_raster_resolution || !raster.native_grid) {
      write_mosaic_vrt(name + ".vrt", pieces, raster.width, raster.height, georef, probabilities, names);
      return model;
    }
    const auto inner = std::filesystem::path(name) / "model_grid.vrt";
    std::filesystem::create_directories(inner.parent_path());
    write_mosaic_vrt(inner, pieces, raster.width, raster.height, georef, probabilities, names);
    const MosaicGrid own{raster.native_grid->width, raster.native_grid->height, raster.native_grid->geotransform};
    write_resampled_vrt(name + ".vrt", inner, model, own, georef.crs_wkt, probabilities, names);
    return own;
  }

  std::filesystem::path piece_path(const TileId& id, std::string_view kind) const {
    const auto folder = plan_.prefixes.at(static_cast<std::size_t>(id.image)).string() + "_" + std::string(kind);
    return std::filesystem::path(folder) / fmt::format("tile_r{}_c{}.tif", id.row, id.column);
  }
  std::filesystem::path class_piece(const TileId& id) const { return piece_path(id, "segmentation"); }
  std::filesystem::path probability_piece(const TileId& id) const { return piece_path(id, "probability"); }

  // A journaled tile's piece comes from an earlier run: if it was removed since, the
  // mosaic would have a hole that looks like data.
  static std::filesystem::path existing_piece(const std::filesystem::path& piece) {
    if (!std::filesystem::exists(piece)) {
      throw UsageError(
          fmt::format("the segmentation piece '{}' of a tile an earlier run finished is missing; run "
                      "again with resume=false to recompute every tile",
                      piece.string()));
    }
    return piece;
  }

  // device_reduction's tuple, on the host now: the batch's classes and, when written,
  // their probabilities.
  PixelResults reduced_on_device(const torch::IValue& output, std::int64_t batch, int tile_size) const {
    const auto& parts = output.toTupleRef().elements();
    const std::vector<std::int64_t> shape{batch, tile_size, tile_size};
    const auto fits = [&](const torch::IValue& part, torch::ScalarType dtype) {
      return part.isTensor() && part.toTensor().scalar_type() == dtype && part.toTensor().is_cpu() &&
             part.toTensor().sizes() == shape;
    };
    const bool probable = with_probability();
    if (parts.size() != 2 || !fits(parts[0], torch::kUInt8) || (probable && !fits(parts[1], torch::kFloat))) {
      // A model whose scores change shape after the one-tile check.
      throw UsageError(fmt::format(
          "model '{}' returned scores that reduce to {} for a batch of {} tiles of {}x{} px; task=segment needs a "
          "[B, C, H, W] tensor of class scores at the tile's own size; see docs/models.md",
          plan_.options.model, describe_output(output), batch, tile_size, tile_size));
    }
    return {parts[0].toTensor(), probable ? parts[1].toTensor() : torch::Tensor()};
  }

  // Each tile's result: "piece", then with polygons=true a space and its regions.
  static constexpr std::string_view kPiece = "piece";

  // The probabilities are needed for their own raster and for the polygons' scores.
  [[nodiscard]] bool with_probability() const { return plan_.options.segment_probability || plan_.options.polygons; }

  // Writes the tile's pieces and returns its result. `probabilities` may be undefined
  // without with_probability().
  std::string write_pieces(const TileData& tile, const torch::Tensor& classes, const torch::Tensor& probabilities) {
    const auto& raster = plan_.rasters.at(static_cast<std::size_t>(tile.tile.id.image));
    const auto core = tile_core(tile.tile, raster.width, raster.height, plan_.tile_size, plan_.options.overlap);
    const int dx = core.x - tile.tile.window.x;
    const int dy = core.y - tile.tile.window.y;
    const auto* class_data = classes.data_ptr<std::uint8_t>();
    const float* probability_data = probabilities.defined() ? probabilities.data_ptr<float>() : nullptr;
    std::vector<std::uint8_t> core_classes(static_cast<std::size_t>(core.width) * core.height);
    std::vector<float> core_probabilities(with_probability() ? core_classes.size() : 0);
    for (int y = 0; y < core.height; ++y) {
      for (int x = 0; x < core.width; ++x) {
        const auto from = static_cast<std::size_t>(y + dy) * tile.width + (x + dx);
        const auto to = static_cast<std::size_t>(y) * core.width + x;
        const bool valid = tile.valid.empty() || tile.valid[from] != 0;
        core_classes[to] = valid ? class_data[from] : kNoClass;
        if (!core_probabilities.empty()) core_probabilities[to] = valid ? probability_data[from] : 0.0F;
      }
    }
    const auto& georef = georefs_.at(static_cast<std::size_t>(tile.tile.id.image));
    const auto piece = class_piece(tile.tile.id);
    std::filesystem::create_directories(piece.parent_path());
    write_class_piece(piece, core, core_classes, georef);
    if (plan_.options.segment_probability) {
      const auto probability = probability_piece(tile.tile.id);
      std::filesystem::create_directories(probability.parent_path());
      write_probability_piece(probability, core, core_probabilities, georef);
    }
    if (!polygons_) return std::string(kPiece);
    return fmt::format("{} {}", kPiece, polygons_->encode(tile.tile, core, core_classes, core_probabilities));
  }

  OutputPlan plan_;
  std::vector<RasterGeoreference> georefs_;  // index: TileId::image
  std::optional<SegmentPolygons> polygons_;  // polygons=true; after plan_, which it reads
};

}  // namespace

std::unique_ptr<TaskOutput> make_segment_output(const OutputPlan& plan) {
  return std::make_unique<SegmentOutput>(plan);
}
#else
std::unique_ptr<TaskOutput> make_segment_output(const OutputPlan& /*plan*/) {
  throw UsageError(
      "task=segment writes GeoTIFF pieces and a VRT, and this mgpr was built without GDAL; use a "
      "build with GDAL (libgdal-dev)");
}
#endif

}  // namespace mgpr::runtime
