#include "tasks/task_output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <algorithm>
#include <climits>
#include <set>
#include <stdexcept>

#include "crops/crop_classifier.hpp"
#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"
#include "tasks/task_factories.hpp"
#include "writers/geoparquet_writer.hpp"
#include "writers/vector_formats.hpp"

namespace mgpr::runtime {

void add_task_notes(RankSummary& summary, const TaskOutput& output) {
  auto notes = output.notes();
  summary.box_cap = notes.box_cap;
  summary.tiles_at_box_cap = notes.tiles_at_box_cap;
  for (auto& warning : notes.warnings) summary.warnings.push_back(std::move(warning));
}

void TaskOutput::consume(std::span<const TileData> tiles, const torch::IValue& output) {
  consume_with_inputs(tiles, output, BatchInput{});
}

void TaskOutput::consume_with_inputs(std::span<const TileData> tiles, const torch::IValue& output,
                                     const BatchInput& input) {
  auto encoded = encode_batch(tiles, output, input);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    if (journal_ != nullptr) journal_->append(tiles[i].tile.id, encoded[i]);
    ++tiles_done_[tiles[i].tile.id.image];
  }
  // Journaled before anything leaves the rank: a result rank 0 writes is one a resumed
  // run finds again.
  if (journal_ != nullptr) journal_->flush();
  TileResults batch;
  for (std::size_t i = 0; i < tiles.size(); ++i) batch[tiles[i].tile.id] = std::move(encoded[i]);
  if (sink_ != nullptr) {
    sink_->take(std::move(batch));
  } else {
    new_results_.merge(batch);
  }
}

std::vector<std::filesystem::path> TaskOutput::write_outputs(const TileResults& all, const RasterFailures& failed) {
  std::vector<std::filesystem::path> written;
  auto outcomes = raster_outcomes(plan(), all, failed);
  const auto rows = rows_of_tiles(plan());
  for (std::size_t image = 0; image < rows.size(); ++image) {
    // Fake data has one set of results and no raster: image 0, no outcome.
    if (!outcomes.empty() && outcomes[image].failed) continue;
    std::int64_t results = 0;
    for (std::size_t r = 0; r < rows[image].size(); ++r) {
      const RasterRow row{static_cast<int>(image), rows[image][r].first, r + 1 == rows[image].size()};
      const auto [first, last] = results_of_row(all, row.image, row.row);
      results += write_row(row, first, last, written);
    }
    if (!outcomes.empty()) outcomes[image].results = results;
  }
  finish_outputs(outcomes, written);
  return written;
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

GeoTransform raster_transform(const RasterDescription& raster) { return raster.geotransform.value_or(GeoTransform()); }

std::string tile_name(const OutputPlan& plan, const Tile& tile) {
  const auto image = static_cast<std::size_t>(tile.id.image);
  // Fake data's tiles are each a whole image of their own, told apart by their row.
  if (image >= plan.rasters.size()) return fmt::format("fake tile {}", tile.id.row);
  return fmt::format("{} tile at x {}, y {}", std::filesystem::path(plan.rasters[image].path).filename().string(),
                     tile.window.x, tile.window.y);
}

OutputPlan plan_outputs(const TaskOptions& options, const TileSource& source) {
  // Refused before any tile, not when the first raster's results are written.
  if (vector_format(options.format).writer == VectorWriterKind::kGeoParquet && !output::geoparquet_available() &&
      !source.rasters().empty()) {
    throw UsageError(
        "output_format=parquet: this build of mgpr has no GeoParquet writer (Arrow); build it with scripts/build, "
        "which fetches Arrow (scripts/fetch-arrow), or choose output_format=gpkg");
  }
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

std::unique_ptr<TaskOutput> make_task_output(const OutputPlan& plan, std::unique_ptr<CropClassifier> crop_classifier) {
  if (crop_classifier && plan.options.task != Task::kDetect) {
    throw std::logic_error("a crop classifier for a task other than detect");
  }
  switch (plan.options.task) {
    case Task::kDetect:
      return make_detect_output(plan, std::move(crop_classifier));
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

std::pair<TileResults::const_iterator, TileResults::const_iterator> results_of_row(const TileResults& all, int image,
                                                                                   int row) {
  return {all.lower_bound(TileId{image, row, INT_MIN}), all.lower_bound(TileId{image, row + 1, INT_MIN})};
}

std::vector<std::vector<std::pair<int, std::int64_t>>> rows_of_tiles(const OutputPlan& plan) {
  std::vector<std::vector<std::pair<int, std::int64_t>>> rows(std::max<std::size_t>(plan.rasters.size(), 1));
  for (const auto& tile : plan.tiles) {
    auto& of_image = rows.at(static_cast<std::size_t>(tile.id.image));
    if (of_image.empty() || of_image.back().first != tile.id.row) of_image.emplace_back(tile.id.row, 0);
    ++of_image.back().second;
  }
  return rows;
}

std::optional<int> next_row_top(const OutputPlan& plan, int image, int row) {
  const auto next = std::lower_bound(plan.tiles.begin(), plan.tiles.end(), TileId{image, row + 1, INT_MIN},
                                     [](const Tile& tile, const TileId& id) { return tile.id < id; });
  if (next == plan.tiles.end() || next->id.image != image) return std::nullopt;
  return next->window.y;
}

std::filesystem::path run_file(const OutputPlan& plan, std::string_view what, std::string_view extension) {
  return plan.options.output_dir / fmt::format("run_{}{}", what, extension);
}

std::string encode_results(const TileResults& results) {
  std::string text;
  for (const auto& [id, payload] : results) text += format_result_line(id, payload);
  return text;
}

void decode_results(const std::string& text, TileResults& into) { parse_result_lines(text, into); }

void check_class_names(Task task, const torch::IValue& one_tile_output, const std::vector<std::string>& class_names,
                       const std::string& origin) {
  if (class_names.empty() || task == Task::kDetect || !one_tile_output.isTensor()) return;
  const auto& output = one_tile_output.toTensor();
  if (output.dim() < 2) return;
  const auto classes = output.size(1);
  const auto names = static_cast<std::int64_t>(class_names.size());
  // One logit (segment): class 1 where it is above 0, so "background" may be named or not.
  const bool fits = names == classes || (task == Task::kSegment && classes == 1 && names <= 2);
  if (fits) return;
  throw UsageError(
      fmt::format("{} names {} classes ({}) but the model's output has {} {} per {}; give one name per class, label 0 "
                  "first, or leave class_names empty",
                  origin, names, fmt::join(class_names, ", "), classes, task == Task::kSegment ? "channels" : "logits",
                  task == Task::kSegment ? "pixel" : "tile"));
}

}  // namespace mgpr::runtime
