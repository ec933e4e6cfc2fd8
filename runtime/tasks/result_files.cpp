#include "tasks/result_files.hpp"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "mgpr/log_layout.hpp"
#include "tasks/task_factories.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime {
namespace {

// Rasters share a layer when their CRSs have one EPSG code, else when their WKT is the same.
std::string crs_key(const std::string& wkt) {
  if (const auto code = epsg_code(wkt)) return fmt::format("EPSG:{}", *code);
  return wkt;
}

const std::vector<VectorField>& raster_fields() {
  using Type = VectorField::Type;
  static const std::vector<VectorField> fields{{"raster", Type::kString},      {"status", Type::kString},
                                               {"error", Type::kString},       {"tiles", Type::kInteger},
                                               {"tiles_done", Type::kInteger}, {"results", Type::kInteger}};
  return fields;
}

}  // namespace

ResultFiles::ResultFiles(const OutputPlan& plan, std::string what, std::vector<VectorField> fields)
    : plan_(plan), what_(std::move(what)), fields_(std::move(fields)) {
  std::vector<Record> none;
  select_fields(
      fields_, {}, [](const VectorField& f) { return in_table(f); }, table_fields_, none);
  select_fields(
      fields_, {}, [this](const VectorField& f) { return in_layer(f); }, layer_fields_, none);
  if (!run_layout()) return;
  std::map<std::string, std::size_t> groups;
  for (const auto& raster : plan_.rasters) {
    const auto [at, added] = groups.try_emplace(crs_key(raster.crs_wkt), wkts_.size());
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
}

// Layers in the order the files always had: per CRS group its result layer, then its
// `rasters` layer; one file for them all where the format holds many (run_<what>.gpkg),
// else one file per layer, named after it (run_detections.fgb, run_rasters.fgb, ...).
void ResultFiles::open_run_files() {
  if (opened_) return;
  opened_ = true;
  std::filesystem::create_directories(plan_.options.output_dir);
  if (table_written()) {
    run_table_.emplace(run_file(plan_, what_, ".csv"));
    run_table_->append(table_header(table_fields_));
  }
  std::vector<RecordLayer> layers;
  for (std::size_t group = 0; group < wkts_.size(); ++group) {
    if (!fields_.empty()) layers.push_back({what_ + suffixes_[group], wkts_[group], layer_fields_, {}});
    layers.push_back({"rasters" + suffixes_[group], wkts_[group], raster_fields(), {}});
  }
  const auto& format = vector_format(plan_.options.format);
  std::vector<Slot> slots;
  if (format.many_layers) {
    file_names_.push_back(run_file(plan_, what_, format.extension));
    files_.emplace_back(file_names_.back(), layers, plan_.options.run_settings);
    for (std::size_t i = 0; i < layers.size(); ++i) slots.push_back({0, i});
  } else {
    for (const auto& layer : layers) {
      slots.push_back({files_.size(), 0});
      file_names_.push_back(run_file(plan_, layer.name, format.extension));
      files_.emplace_back(file_names_.back(), std::span(&layer, 1), plan_.options.run_settings);
    }
  }
  const std::size_t per_group = fields_.empty() ? 1 : 2;
  for (std::size_t group = 0; group < wkts_.size(); ++group) {
    if (!fields_.empty()) result_slots_.push_back(slots[group * per_group]);
    raster_slots_.push_back(slots[group * per_group + per_group - 1]);
  }
}

bool ResultFiles::run_layout() const { return plan_.layout == OutputLayout::kRun && !plan_.rasters.empty(); }

bool ResultFiles::in_table(const VectorField& field) { return field.shown != VectorField::Shown::kLayer; }

bool ResultFiles::in_layer(const VectorField& field) const {
  using Shown = VectorField::Shown;
  // A format that replaces the table shows every field, so nothing of it is lost.
  return vector_format(plan_.options.format).replaces_table || field.shown == Shown::kEverywhere ||
         field.shown == Shown::kLayer || (run_layout() && field.shown == Shown::kTableAndRunLayer);
}

bool ResultFiles::table_written() const {
  // Fake data has no geometry to write: its table, whatever the format.
  return !fields_.empty() && (plan_.rasters.empty() || !vector_format(plan_.options.format).replaces_table);
}

void ResultFiles::add(int image, std::span<const Record> records) {
  std::vector<VectorField> ignored;
  std::vector<Record> table;
  if (table_written()) select_fields(fields_, records, in_table, ignored, table);
  std::vector<Record> layer;
  if (!plan_.rasters.empty()) {
    select_fields(
        fields_, records, [this](const VectorField& f) { return in_layer(f); }, ignored, layer);
  }
  if (run_layout()) {
    open_run_files();
    if (run_table_) run_table_->append(table_rows(table_fields_, table));
    const auto slot = result_slots_.at(group_of_.at(static_cast<std::size_t>(image)));
    files_.at(slot.file).append(slot.layer, layer);
    return;
  }
  auto& files = raster_files(image);
  if (files.table) files.table->append(table_rows(table_fields_, table));
  if (files.layer) files.layer->append(0, layer);
}

ResultFiles::RasterFiles& ResultFiles::raster_files(int image) {
  const auto index = static_cast<std::size_t>(image);
  auto [at, added] = open_rasters_.try_emplace(image);
  auto& files = at->second;
  if (!added) return files;
  const auto prefix = plan_.prefixes.at(index).string() + "_" + what_;
  std::filesystem::create_directories(plan_.prefixes.at(index).parent_path());
  if (table_written()) {
    files.names.emplace_back(prefix + ".csv");
    files.table.emplace(files.names.back());
    files.table->append(table_header(table_fields_));
  }
  if (!plan_.rasters.empty()) {
    files.names.emplace_back(prefix + std::string(vector_format(plan_.options.format).extension));
    const RecordLayer layer{what_, plan_.rasters.at(index).crs_wkt, layer_fields_, {}};
    files.layer.emplace(files.names.back(), std::span(&layer, 1), plan_.options.run_settings);
  }
  return files;
}

void ResultFiles::finish_raster(int image, std::vector<std::filesystem::path>& written) {
  if (run_layout()) return;
  auto& files = raster_files(image);  // a raster without results still gets its (empty) files
  if (files.table) files.table->commit();
  if (files.layer) files.layer->commit();
  written.insert(written.end(), files.names.begin(), files.names.end());
  open_rasters_.erase(image);
}

void ResultFiles::abandon_raster(int image) { open_rasters_.erase(image); }

void ResultFiles::finish(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) {
  if (!run_layout()) return;
  if (outcomes.size() != plan_.rasters.size()) throw std::logic_error("an outcome per raster is needed");
  open_run_files();
  if (run_table_) {
    run_table_->commit();
    written.push_back(run_file(plan_, what_, ".csv"));
  }
  for (std::size_t i = 0; i < plan_.rasters.size(); ++i) {
    const auto& raster = plan_.rasters[i];
    const auto& outcome = outcomes[i];
    const Record footprint{raster_transform(raster).footprint(0, 0, raster.width, raster.height),
                           {raster.path, std::string(outcome.failed ? "failed" : "complete"), outcome.error,
                            outcome.tiles, outcome.tiles_done, outcome.results}};
    const auto slot = raster_slots_.at(group_of_[i]);
    files_.at(slot.file).append(slot.layer, std::span(&footprint, 1));
  }
  for (std::size_t f = 0; f < files_.size(); ++f) {
    files_[f].commit();
    written.push_back(file_names_[f]);
  }
}

}  // namespace mgpr::runtime
