// task=detect: boxes per tile → image pixels (clipped, cut ones marked) → journaled;
// rank 0 merges the boxes of overlapping tiles and writes them in map coordinates.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <optional>
#include <span>

#include "crops/crop_classifier.hpp"
#include "geometry/box_merge.hpp"
#include "geometry/georef.hpp"
#include "geometry/row_merge.hpp"
#include "mgpr/summary.hpp"
#include "tasks/detection_parse.hpp"
#include "tasks/result_files.hpp"
#include "tasks/task_factories.hpp"
#include "writers/quicklook.hpp"

namespace mgpr::runtime {
namespace {

// "x1 y1 x2 y2 score label truncated;" per box, with "crop_label crop_score" before the
// ';' when a crop classifier ran; 9 significant digits give a float32 back exactly, so a
// journaled box equals the one rank 0 received through the store.
std::string encode(const std::vector<Box>& boxes, bool classified) {
  std::string text;
  for (const auto& b : boxes) {
    text += fmt::format("{:.9g} {:.9g} {:.9g} {:.9g} {:.9g} {} {}", b.x1, b.y1, b.x2, b.y2, b.score, b.label,
                        b.truncated ? 1 : 0);
    if (classified) {
      const auto answer = b.classification.value_or(BoxClass{});
      text += fmt::format(" {} {:.9g}", answer.label, answer.score);
    }
    text += ';';
  }
  return text;
}

// Numbers read with from_chars, exact as strtod and several times as fast: rank 0 reads
// every box of the run. An item that does not parse, or holds a number that is not
// finite (which the stream read this used to be refused), is skipped.
void decode(const TileId& tile, const std::string& payload, std::vector<Box>& into) {
  const char* at = payload.data();
  const char* const end = at + payload.size();
  while (at < end) {
    const char* item_end = std::find(at, end, ';');
    Box box;
    box.tile = tile;
    int truncated = 0;
    BoxClass answer;
    const auto next = [&](auto& value) {
      while (at < item_end && *at == ' ') ++at;
      const auto [stop, error] = std::from_chars(at, item_end, value);
      at = stop;
      return error == std::errc();
    };
    const auto rest_is_blank = [&] {
      while (at < item_end && *at == ' ') ++at;
      return at == item_end;
    };
    const bool fields = next(box.x1) && next(box.y1) && next(box.x2) && next(box.y2) && next(box.score) &&
                        next(box.label) && next(truncated);
    const bool classified = fields && !rest_is_blank();
    const bool valid = fields && (!classified || (next(answer.label) && next(answer.score))) && std::isfinite(box.x1) &&
                       std::isfinite(box.y1) && std::isfinite(box.x2) && std::isfinite(box.y2) &&
                       std::isfinite(box.score) && std::isfinite(answer.score);
    if (valid) {
      box.truncated = truncated != 0;
      if (classified) box.classification = answer;
      into.push_back(box);
    }
    at = item_end + 1;
  }
}

constexpr std::size_t kRecordsAtOnce = 4096;
// The tiles at the model's cap a rank's warning names; the rest are counted.
constexpr std::size_t kTilesNamed = 10;

class DetectOutput final : public TaskOutput {
 public:
  DetectOutput(const OutputPlan& plan, std::unique_ptr<CropClassifier> classifier)
      : plan_(plan), classifier_(std::move(classifier)), files_(plan_, "detections", fields()) {}

  void check_output(const torch::IValue& output, std::int64_t batch, int /*tile_size*/) const override {
    (void)parse_detections(output, batch, plan_.options.score_threshold, plan_.options.model);
  }

  std::vector<std::string> encode_batch(std::span<const TileData> tiles, const torch::IValue& output,
                                        const BatchInput& input) override {
    std::vector<std::int64_t> returned;
    auto per_tile = parse_detections(output, static_cast<std::int64_t>(tiles.size()), plan_.options.score_threshold,
                                     plan_.options.model, &returned);
    count_tiles_at_cap(tiles, returned);
    // Classified in the tile's own pixels, before the boxes are placed in the raster.
    if (classifier_) {
      if (!input.samples.defined()) throw std::logic_error("a crop classifier without the batch's pixels");
      const auto classes = classifier_->classify(input, per_tile, tiles);
      for (std::size_t i = 0; i < per_tile.size(); ++i) {
        for (std::size_t k = 0; k < per_tile[i].size(); ++k) per_tile[i][k].classification = classes[i][k];
      }
    }
    std::vector<std::string> encoded;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const auto& tile = tiles[i].tile;
      const auto& raster = plan_.rasters.at(static_cast<std::size_t>(tile.id.image));
      std::vector<Box> placed;
      for (auto& box : per_tile[i]) {
        if (place_in_image(box, tile.window, raster.width, raster.height)) placed.push_back(box);
      }
      encoded.push_back(encode(placed, classifier_ != nullptr));
    }
    return encoded;
  }

  [[nodiscard]] const OutputPlan& plan() const override { return plan_; }

  [[nodiscard]] TaskNotes notes() const override {
    const std::lock_guard lock(cap_mutex_);
    TaskNotes notes{plan_.options.box_cap, tiles_at_cap_, {}};
    if (tiles_at_cap_ > 0) {
      notes.warnings.push_back(fmt::format(
          "{} ({}{})", box_cap_message(tiles_at_cap_, plan_.options.box_cap), fmt::join(named_at_cap_, "; "),
          tiles_at_cap_ > static_cast<std::int64_t>(named_at_cap_.size()) ? "; ..." : ""));
    }
    return notes;
  }

  // The row's boxes merged with those held from the rows before (row_merge.hpp): the
  // boxes that became final are written now, the rest wait for the next row.
  std::int64_t write_row(const RasterRow& row, TileResults::const_iterator first, TileResults::const_iterator last,
                         std::vector<std::filesystem::path>& written) override {
    if (plan_.rasters.empty()) return 0;  // fake data has no raster to place boxes in
    const auto index = static_cast<std::size_t>(row.image);
    if (!merge_ || merge_image_ != row.image) {
      merge_.emplace(MergeOptions{plan_.options.iou_threshold, 0.5, plan_.options.class_aware_nms});
      merge_image_ = row.image;
      drawn_.clear();
    }
    std::vector<Box> boxes;
    for (auto at = first; at != last; ++at) decode(at->first, at->second, boxes);
    const auto top = row.last ? std::nullopt : next_row_top(plan_, row.image, row.row);
    const auto merged = merge_->add_row(std::move(boxes), top);
    // Records a few thousand at a time: a row of a dense raster has tens of thousands of
    // boxes, and a record (its fields, its polygon, the copies the files select) weighs
    // far more than a box.
    for (std::size_t at = 0; at < merged.size(); at += kRecordsAtOnce) {
      const auto chunk = std::span(merged).subspan(at, std::min(kRecordsAtOnce, merged.size() - at));
      files_.add(row.image, records(plan_.rasters.at(index), chunk));
    }
    // The quicklook draws the raster's boxes at once: with it, they are kept until its last row.
    if (plan_.options.quicklook) drawn_.insert(drawn_.end(), merged.begin(), merged.end());
    if (row.last) {
      files_.finish_raster(row.image, written);
      write_quicklook(index, drawn_, written);
      merge_.reset();
      drawn_ = {};
    }
    return static_cast<std::int64_t>(merged.size());
  }

  void abandon_raster(int image) override {
    files_.abandon_raster(image);
    if (merge_image_ == image) merge_.reset();
  }

  void finish_outputs(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) override {
    files_.finish(outcomes, written);
  }

 private:
  // Without class names the files stay as they were before names existed: a
  // `label_name` field of empty values would change every existing output for nothing.
  [[nodiscard]] bool named() const { return !plan_.options.class_names.empty(); }
  [[nodiscard]] bool crop_named() const { return classifier_ && !classifier_->class_names().empty(); }

  // The table's columns and the layer's fields (docs/outputs.md), in one list. Box
  // corners and scores come from float32 outputs: 9 digits give them back exactly.
  [[nodiscard]] std::vector<VectorField> fields() const {
    using Type = VectorField::Type;
    using Shown = VectorField::Shown;
    std::vector<VectorField> list{{"raster", Type::kString, Shown::kTableAndRunLayer},
                                  {"label", Type::kInteger},
                                  {"score", Type::kReal, Shown::kEverywhere, true}};
    for (const char* corner : {"x1", "y1", "x2", "y2"}) list.push_back({corner, Type::kReal, Shown::kEverywhere, true});
    for (const char* map : {"map_x1", "map_y1", "map_x2", "map_y2", "center_x", "center_y"}) {
      list.push_back({map, Type::kReal, Shown::kTable});
    }
    list.push_back({"tile_row", Type::kInteger, Shown::kTable});
    list.push_back({"tile_column", Type::kInteger, Shown::kTable});
    if (named()) list.insert(list.begin() + 2, {"label_name", Type::kString});
    if (classifier_) {
      list.push_back({"crop_label", Type::kInteger});
      if (crop_named()) list.push_back({"crop_label_name", Type::kString});
      list.push_back({"crop_score", Type::kReal, Shown::kEverywhere, true});
    }
    return list;
  }

  // One record per box, sorted as merge_boxes left them: its polygon on the map (a
  // parallelogram under a rotated geotransform) and its fields.
  [[nodiscard]] std::vector<Record> records(const RasterDescription& raster, std::span<const Box> boxes) const {
    const auto transform = raster_transform(raster);
    std::vector<Record> out;
    out.reserve(boxes.size());
    for (const auto& b : boxes) {
      const auto corner1 = transform.to_map(b.x1, b.y1);
      const auto corner2 = transform.to_map(b.x2, b.y2);
      const auto centre = transform.to_map((b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2);
      std::vector<FieldValue> values{raster.path,
                                     b.label,
                                     b.score,
                                     b.x1,
                                     b.y1,
                                     b.x2,
                                     b.y2,
                                     corner1.x,
                                     corner1.y,
                                     corner2.x,
                                     corner2.y,
                                     centre.x,
                                     centre.y,
                                     std::int64_t{b.tile.row},
                                     std::int64_t{b.tile.column}};
      if (named()) values.insert(values.begin() + 2, class_name(plan_.options.class_names, b.label));
      if (classifier_) {
        const auto answer = b.classification.value_or(BoxClass{});
        values.emplace_back(answer.label);
        if (crop_named()) values.emplace_back(class_name(classifier_->class_names(), answer.label));
        values.emplace_back(answer.score);
      }
      out.push_back({transform.footprint(b.x1, b.y1, b.x2, b.y2), std::move(values)});
    }
    return out;
  }

  void write_quicklook(std::size_t image, const std::vector<Box>& boxes, std::vector<std::filesystem::path>& written) {
    if (!plan_.options.quicklook) return;
    const auto& raster = plan_.rasters[image];
    const auto file = plan_.prefixes[image].string() + "_quicklook.png";
    std::filesystem::create_directories(plan_.prefixes[image].parent_path());
    write_box_quicklook(file,
                        {raster.path, raster.bands, plan_.options.quicklook_size, raster.width, raster.height,
                         plan_.options.class_names},
                        boxes);
    written.emplace_back(file);
  }

  // A tile for which the model returned as many boxes as it returns at most.
  void count_tiles_at_cap(std::span<const TileData> tiles, std::span<const std::int64_t> returned) {
    if (plan_.options.box_cap <= 0) return;
    const std::lock_guard lock(cap_mutex_);
    for (std::size_t i = 0; i < tiles.size() && i < returned.size(); ++i) {
      if (returned[i] < plan_.options.box_cap) continue;
      ++tiles_at_cap_;
      if (named_at_cap_.size() >= kTilesNamed) continue;
      named_at_cap_.push_back(tile_name(plan_, tiles[i].tile));
    }
  }

  OutputPlan plan_;
  std::unique_ptr<CropClassifier> classifier_;  // classify_model=; before files_, whose fields it adds
  ResultFiles files_;                           // after plan_, which it reads
  std::optional<RowMerge> merge_;               // of the raster being written
  int merge_image_ = -1;
  std::vector<Box> drawn_;        // quicklook=true: the raster's boxes so far
  mutable std::mutex cap_mutex_;  // guards the two below: batches may end on several threads
  std::int64_t tiles_at_cap_ = 0;
  std::vector<std::string> named_at_cap_;  // the first kTilesNamed of them
};

}  // namespace

std::unique_ptr<TaskOutput> make_detect_output(const OutputPlan& plan,
                                               std::unique_ptr<CropClassifier> crop_classifier) {
  return std::make_unique<DetectOutput>(plan, std::move(crop_classifier));
}

}  // namespace mgpr::runtime
