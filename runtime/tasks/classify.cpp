// task=classify: [B, C] logits → a label, its softmax probability and its logit per
// tile; each tile's result one record (its footprint and fields), which the result files
// write as the table and the vector layer (result_files.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>

#include "geometry/georef.hpp"
#include "mgpr/error.hpp"
#include "tasks/result_files.hpp"
#include "tasks/task_factories.hpp"

namespace mgpr::runtime {
namespace {

struct TileClass {
  std::int64_t label = 0;
  double score = 0;
  double logit = 0;
};

TileClass decode(const std::string& payload) {
  TileClass result;
  std::istringstream(payload) >> result.label >> result.score >> result.logit;
  return result;
}

class ClassifyOutput final : public TaskOutput {
 public:
  explicit ClassifyOutput(const OutputPlan& plan) : plan_(plan), files_(plan_, "tiles", fields()) {}

  void check_output(const torch::IValue& output, std::int64_t batch, int /*tile_size*/) const override {
    if (!output.isTensor() || output.toTensor().dim() != 2 || output.toTensor().size(0) != batch) {
      throw UsageError(fmt::format(
          "model '{}' returned {} for a batch of {} tiles; task=classify needs a [B, C] tensor of logits (one row "
          "per tile); see docs/models.md",
          plan_.options.model, describe_output(output), batch));
    }
  }

  std::vector<std::string> encode_batch(std::span<const TileData> tiles, const torch::IValue& output,
                                        const BatchInput& /*input*/) override {
    const auto batch = static_cast<std::int64_t>(tiles.size());
    check_output(output, batch, tiles.front().height);
    const auto logits = output.toTensor().to(torch::kCPU, torch::kDouble);
    const auto probabilities = torch::softmax(logits, 1);
    const auto [best, labels] = logits.max(1);
    std::vector<std::string> encoded;
    for (std::int64_t i = 0; i < batch; ++i) {
      const auto label = labels[i].item<std::int64_t>();
      encoded.push_back(
          fmt::format("{} {:.9g} {:.9g}", label, probabilities[i][label].item<double>(), best[i].item<double>()));
    }
    return encoded;
  }

  [[nodiscard]] const OutputPlan& plan() const override { return plan_; }

  std::int64_t write_row(const RasterRow& row, TileResults::const_iterator first, TileResults::const_iterator last,
                         std::vector<std::filesystem::path>& written) override {
    const bool fake = plan_.rasters.empty();
    const auto index = static_cast<std::size_t>(row.image);
    const auto transform = fake ? GeoTransform() : raster_transform(plan_.rasters.at(index));
    const std::string raster_name = fake ? "fake" : plan_.rasters.at(index).path;
    std::vector<Record> records;
    for (auto at = first; at != last; ++at)
      records.push_back(record(raster_name, at->first, window_of(at->first), transform, decode(at->second)));
    files_.add(row.image, records);
    if (row.last) files_.finish_raster(row.image, written);
    return std::distance(first, last);
  }

  void abandon_raster(int image) override { files_.abandon_raster(image); }

  void finish_outputs(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) override {
    files_.finish(outcomes, written);
  }

 private:
  // The run's tiles are in id order.
  [[nodiscard]] const PixelWindow& window_of(const TileId& id) const {
    const auto at = std::lower_bound(plan_.tiles.begin(), plan_.tiles.end(), id,
                                     [](const Tile& tile, const TileId& wanted) { return tile.id < wanted; });
    if (at == plan_.tiles.end() || at->id != id) throw std::logic_error("a result for a tile the run does not have");
    return at->window;
  }

  // Without class names the files stay as they were before names existed: a
  // `label_name` field of empty values would change every existing output for nothing.
  [[nodiscard]] bool named() const { return !plan_.options.class_names.empty(); }

  // The table's columns and the layer's fields (docs/outputs.md), in one list: the
  // tile's place is `row`, `column` in the table and `tile_row`, `tile_column` in the
  // layers, as they always were.
  [[nodiscard]] std::vector<VectorField> fields() const {
    using Type = VectorField::Type;
    using Shown = VectorField::Shown;
    std::vector<VectorField> list{{"raster", Type::kString, Shown::kTableAndRunLayer},
                                  {"image", Type::kInteger, Shown::kTable},
                                  {"row", Type::kInteger, Shown::kTable},
                                  {"column", Type::kInteger, Shown::kTable},
                                  {"tile_row", Type::kInteger, Shown::kLayer},
                                  {"tile_column", Type::kInteger, Shown::kLayer},
                                  {"x", Type::kInteger, Shown::kTable},
                                  {"y", Type::kInteger, Shown::kTable},
                                  {"width", Type::kInteger, Shown::kTable},
                                  {"height", Type::kInteger, Shown::kTable},
                                  {"center_x", Type::kReal, Shown::kTable},
                                  {"center_y", Type::kReal, Shown::kTable},
                                  {"label", Type::kInteger},
                                  {"score", Type::kReal, Shown::kEverywhere, true},
                                  {"logit", Type::kReal, Shown::kEverywhere, true}};
    if (named()) list.insert(list.end() - 2, {"label_name", Type::kString});
    return list;
  }

  [[nodiscard]] Record record(const std::string& raster, const TileId& id, const PixelWindow& w,
                              const GeoTransform& transform, const TileClass& result) const {
    const auto centre = transform.to_map(w.x + w.width / 2.0, w.y + w.height / 2.0);
    std::vector<FieldValue> values{raster,
                                   std::int64_t{id.image},
                                   std::int64_t{id.row},
                                   std::int64_t{id.column},
                                   std::int64_t{id.row},
                                   std::int64_t{id.column},
                                   std::int64_t{w.x},
                                   std::int64_t{w.y},
                                   std::int64_t{w.width},
                                   std::int64_t{w.height},
                                   centre.x,
                                   centre.y,
                                   result.label,
                                   result.score,
                                   result.logit};
    if (named()) values.insert(values.end() - 2, class_name(plan_.options.class_names, result.label));
    return {transform.footprint(w.x, w.y, w.x + w.width, w.y + w.height), std::move(values)};
  }

  OutputPlan plan_;
  ResultFiles files_;  // after plan_, which it reads
};

}  // namespace

std::unique_ptr<TaskOutput> make_classify_output(const OutputPlan& plan) {
  return std::make_unique<ClassifyOutput>(plan);
}

}  // namespace mgpr::runtime
