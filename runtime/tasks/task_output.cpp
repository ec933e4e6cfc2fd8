#include "tasks/task_output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <climits>
#include <map>
#include <set>
#include <stdexcept>

#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"
#include "tasks/task_factories.hpp"

namespace mgpr::runtime {

void TaskOutput::consume(std::span<const TileData> tiles, const torch::IValue& output) {
  const auto encoded = encode_batch(tiles, output);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    new_results_[tiles[i].tile.id] = encoded[i];
    if (journal_ != nullptr) journal_->append(tiles[i].tile.id, encoded[i]);
  }
  if (journal_ != nullptr) journal_->flush();
}

std::string describe_output(const torch::IValue& output) {
  if (output.isTensor()) return fmt::format("a tensor of shape [{}]", fmt::join(output.toTensor().sizes(), ", "));
  if (output.isList()) {
    const auto list = output.toListRef();
    return fmt::format("a list of {} {}", list.size(), list.empty() ? "items" : list[0].tagKind());
  }
  return output.tagKind();
}

std::string class_name(const std::vector<std::string>& class_names, std::int64_t label) {
  if (label < 0 || static_cast<std::uint64_t>(label) >= class_names.size()) return {};
  return class_names[static_cast<std::size_t>(label)];
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

GeoTransform raster_transform(const RasterDescription& raster) { return raster.geotransform.value_or(GeoTransform()); }

OutputPlan plan_outputs(const TaskOptions& options, const TileSource& source) {
  OutputPlan plan{options, source.rasters(), source.tiles(), source.tile_size(), {}, OutputLayout::kPerRaster};
  const auto many = plan.rasters.size() > static_cast<std::size_t>(kPerRasterOutputsUpTo);
  if (options.layout == OutputLayout::kRun || (options.layout == OutputLayout::kAuto && many)) {
    plan.layout = OutputLayout::kRun;
  }
  const std::filesystem::path& folder = options.output_dir;
  if (plan.rasters.empty()) {
    plan.prefixes.push_back(folder / "fake");
    return plan;
  }
  std::multiset<std::string> stems;
  for (const auto& raster : plan.rasters) stems.insert(std::filesystem::path(raster.path).stem().string());
  for (std::size_t i = 0; i < plan.rasters.size(); ++i) {
    const auto stem = std::filesystem::path(plan.rasters[i].path).stem().string();
    // Two inputs a.tif from different folders must not overwrite each other's results.
    plan.prefixes.push_back(folder / (stems.count(stem) > 1 ? fmt::format("{}_{}", stem, i) : stem));
  }
  return plan;
}

std::unique_ptr<TaskOutput> make_task_output(const OutputPlan& plan) {
  switch (plan.options.task) {
    case Task::kDetect:
      return make_detect_output(plan);
    case Task::kSegment:
      return make_segment_output(plan);
    case Task::kClassify:
      break;
  }
  return make_classify_output(plan);
}

std::vector<RasterOutcome> raster_outcomes(const OutputPlan& plan, const TileResults& all,
                                           const RasterFailures& failed) {
  // Fake data has tiles but no rasters: no outcomes.
  std::vector<RasterOutcome> outcomes(plan.rasters.size());
  const auto of = [&](int image) {
    return image >= 0 && static_cast<std::size_t>(image) < outcomes.size() ? &outcomes[static_cast<std::size_t>(image)]
                                                                           : nullptr;
  };
  for (const auto& tile : plan.tiles) {
    if (auto* outcome = of(tile.id.image)) ++outcome->tiles;
  }
  for (const auto& [id, payload] : all) {
    if (auto* outcome = of(id.image)) ++outcome->tiles_done;
  }
  for (const auto& [image, why] : failed) {
    if (auto* outcome = of(image)) {
      outcome->failed = true;
      outcome->error = why;
    }
  }
  return outcomes;
}

std::pair<TileResults::const_iterator, TileResults::const_iterator> results_of(const TileResults& all, int image) {
  return {all.lower_bound(TileId{image, INT_MIN, INT_MIN}), all.lower_bound(TileId{image + 1, INT_MIN, INT_MIN})};
}

std::filesystem::path run_file(const OutputPlan& plan, std::string_view what, std::string_view extension) {
  return plan.options.output_dir / fmt::format("run_{}{}", what, extension);
}

void write_run_table(const OutputPlan& plan, std::string_view what, std::string_view csv,
                     std::vector<std::filesystem::path>& written) {
  const auto table = run_file(plan, what, ".csv");
  std::filesystem::create_directories(table.parent_path());
  write_file_atomically(table, csv);
  written.push_back(table);
}

#ifdef MGPR_HAVE_GDAL
namespace {

// Rasters share a layer when their CRSs have one EPSG code, else when their WKT is the same.
std::string crs_key(const std::string& wkt) {
  if (const auto code = epsg_code(wkt)) return fmt::format("EPSG:{}", *code);
  return wkt;
}

}  // namespace

RunGeoPackage::RunGeoPackage(const OutputPlan& plan, std::string layer, std::vector<VectorField> fields)
    : plan_(plan), layer_(std::move(layer)) {
  if (!fields.empty()) {
    fields_.push_back({"raster", VectorField::Type::kString});
    fields_.insert(fields_.end(), fields.begin(), fields.end());
  }
  std::map<std::string, std::size_t> groups;
  for (const auto& raster : plan_.rasters) {
    const auto key = crs_key(raster.crs_wkt);
    const auto [at, added] = groups.try_emplace(key, wkts_.size());
    if (added) {
      const auto code = epsg_code(raster.crs_wkt);
      suffixes_.push_back(wkts_.empty()            ? std::string()
                          : code                   ? fmt::format("_{}", *code)
                          : raster.crs_wkt.empty() ? std::string("_nocrs")
                                                   : fmt::format("_crs{}", wkts_.size() + 1));
      wkts_.push_back(raster.crs_wkt);
    }
    group_of_.push_back(at->second);
  }
  features_.resize(wkts_.size());
}

void RunGeoPackage::add(int image, PolygonFeature feature) {
  const auto index = static_cast<std::size_t>(image);
  feature.values.insert(feature.values.begin(), plan_.rasters.at(index).path);
  features_.at(group_of_.at(index)).push_back(std::move(feature));
}

void RunGeoPackage::write_run_file(std::string_view what, std::span<const RasterOutcome> outcomes,
                                   std::vector<std::filesystem::path>& written) const {
  const auto file = run_file(plan_, what, ".gpkg");
  (void)write(file, outcomes);
  written.push_back(file);
}

std::vector<std::string> RunGeoPackage::write(const std::filesystem::path& file,
                                              std::span<const RasterOutcome> outcomes) const {
  using Type = VectorField::Type;
  static const std::vector<VectorField> kRasterFields{{"raster", Type::kString},      {"status", Type::kString},
                                                      {"error", Type::kString},       {"tiles", Type::kInteger},
                                                      {"tiles_done", Type::kInteger}, {"results", Type::kInteger}};
  if (outcomes.size() != plan_.rasters.size()) throw std::logic_error("an outcome per raster is needed");
  std::vector<std::vector<PolygonFeature>> footprints(wkts_.size());
  for (std::size_t i = 0; i < plan_.rasters.size(); ++i) {
    const auto& raster = plan_.rasters[i];
    const auto& outcome = outcomes[i];
    footprints[group_of_[i]].push_back({raster_transform(raster).footprint(0, 0, raster.width, raster.height),
                                        {raster.path, std::string(outcome.failed ? "failed" : "complete"),
                                         outcome.error, outcome.tiles, outcome.tiles_done, outcome.results}});
  }
  std::vector<PolygonLayer> layers;
  std::vector<std::string> names;
  for (std::size_t group = 0; group < wkts_.size(); ++group) {
    if (!fields_.empty()) {
      layers.push_back({layer_ + suffixes_[group], wkts_[group], fields_, features_[group]});
    }
    layers.push_back({"rasters" + suffixes_[group], wkts_[group], kRasterFields, footprints[group]});
  }
  for (const auto& layer : layers) names.push_back(layer.name);
  std::filesystem::create_directories(file.parent_path());
  write_polygon_layers(file, layers);
  return names;
}
#endif

std::string encode_results(const TileResults& results) {
  std::string text;
  for (const auto& [id, payload] : results) text += format_result_line(id, payload);
  return text;
}

void decode_results(const std::string& text, TileResults& into) { parse_result_lines(text, into); }

}  // namespace mgpr::runtime
