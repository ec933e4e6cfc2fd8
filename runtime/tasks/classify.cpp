// task=classify: [B, C] logits → a label, its softmax probability and its logit per
// tile; written as a CSV and a GeoPackage of tile footprints per raster.
#include <fmt/format.h>

#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "geometry/georef.hpp"
#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"
#include "tasks/task_factories.hpp"
#ifdef MGPR_HAVE_GDAL
#include "writers/vector_layer.hpp"
#endif

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
  explicit ClassifyOutput(const OutputPlan& plan) : plan_(plan) {}

  void check_output(const torch::IValue& output, std::int64_t batch, int /*tile_size*/) const override {
    if (!output.isTensor() || output.toTensor().dim() != 2 || output.toTensor().size(0) != batch) {
      throw UsageError(fmt::format(
          "model '{}' returned {} for a batch of {} tiles; task=classify needs a [B, C] tensor of logits (one row "
          "per tile); see docs/models.md",
          plan_.options.model, describe_output(output), batch));
    }
  }

  std::vector<std::string> encode_batch(std::span<const TileData> tiles, const torch::IValue& output) override {
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

  std::vector<std::filesystem::path> write_outputs(const TileResults& all, const RasterFailures& failed) override {
    std::map<TileId, PixelWindow> windows;
    for (const auto& tile : plan_.tiles) windows[tile.id] = tile.window;
    std::vector<std::filesystem::path> written;
    const bool fake = plan_.rasters.empty();
    // Fake data has no rasters to list: its one CSV, whatever the layout.
    const bool run_layout = plan_.layout == OutputLayout::kRun && !fake;
    auto outcomes = raster_outcomes(plan_, all, failed);
    std::string run_csv = csv_header();
#ifdef MGPR_HAVE_GDAL
    std::optional<RunGeoPackage> gpkg;
    if (run_layout) gpkg.emplace(plan_, "tiles", fields());
#endif
    for (std::size_t image = 0; image < plan_.prefixes.size(); ++image) {
      // A raster that failed has only some of its results: none are written.
      if (!fake && outcomes[image].failed) continue;
      const auto transform = fake ? GeoTransform() : raster_transform(plan_.rasters[image]);
      const std::string raster_name = fake ? "fake" : plan_.rasters[image].path;
      std::string csv;
#ifdef MGPR_HAVE_GDAL
      std::vector<PolygonFeature> features;
#endif
      const auto [first, last] = results_of(all, static_cast<int>(image));
      for (auto at = first; at != last; ++at) {
        const auto& [id, payload] = *at;
        const auto& w = windows.at(id);
        const auto result = decode(payload);
        const auto centre = transform.to_map(w.x + w.width / 2.0, w.y + w.height / 2.0);
        const auto name = named() ? "," + csv_field(class_name(plan_.options.class_names, result.label)) : "";
        csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}{},{:.9g},{:.9g}\n", csv_field(raster_name), id.image,
                           id.row, id.column, w.x, w.y, w.width, w.height, centre.x, centre.y, result.label, name,
                           result.score, result.logit);
#ifdef MGPR_HAVE_GDAL
        std::vector<FieldValue> values{std::int64_t{id.row}, std::int64_t{id.column}, result.label, result.score,
                                       result.logit};
        if (named()) values.insert(values.begin() + 3, class_name(plan_.options.class_names, result.label));
        features.push_back({transform.footprint(w.x, w.y, w.x + w.width, w.y + w.height), std::move(values)});
#endif
      }
      if (!fake) outcomes[image].results = std::distance(first, last);
      if (run_layout) {
        run_csv += csv;
#ifdef MGPR_HAVE_GDAL
        for (auto& feature : features) gpkg->add(static_cast<int>(image), std::move(feature));
#endif
        continue;
      }
      const auto prefix = plan_.prefixes[image];
      std::filesystem::create_directories(prefix.parent_path());
      write_file_atomically(prefix.string() + "_tiles.csv", csv_header() + csv);
      written.emplace_back(prefix.string() + "_tiles.csv");
#ifdef MGPR_HAVE_GDAL
      if (!fake) {
        write_polygon_layer(prefix.string() + "_tiles.gpkg", "tiles", plan_.rasters[image].crs_wkt, fields(), features);
        written.emplace_back(prefix.string() + "_tiles.gpkg");
      }
#endif
    }
    if (run_layout) {
      write_run_table(plan_, "tiles", run_csv, written);
#ifdef MGPR_HAVE_GDAL
      gpkg->write_run_file("tiles", outcomes, written);
#endif
    }
    return written;
  }

 private:
  // Without class names the files stay as they were before names existed: a
  // `label_name` column of empty values would change every existing output for nothing.
  [[nodiscard]] bool named() const { return !plan_.options.class_names.empty(); }

  [[nodiscard]] std::string csv_header() const {
    return named() ? "raster,image,row,column,x,y,width,height,center_x,center_y,label,label_name,score,logit\n"
                   : "raster,image,row,column,x,y,width,height,center_x,center_y,label,score,logit\n";
  }

#ifdef MGPR_HAVE_GDAL
  [[nodiscard]] std::vector<VectorField> fields() const {
    using Type = VectorField::Type;
    std::vector<VectorField> list{{"tile_row", Type::kInteger},
                                  {"tile_column", Type::kInteger},
                                  {"label", Type::kInteger},
                                  {"score", Type::kReal},
                                  {"logit", Type::kReal}};
    if (named()) list.insert(list.begin() + 3, {"label_name", Type::kString});
    return list;
  }
#endif

  OutputPlan plan_;
};

}  // namespace

std::unique_ptr<TaskOutput> make_classify_output(const OutputPlan& plan) {
  return std::make_unique<ClassifyOutput>(plan);
}

}  // namespace mgpr::runtime
