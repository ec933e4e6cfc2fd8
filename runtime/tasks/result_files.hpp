#pragma once
// The files of a task's records, for every task and every format (docs/outputs.md): per
// raster, the table <prefix>_<what>.csv and the vector file <prefix>_<what>.<ext> (layer
// <what>); for the run, run_<what>.csv and the vector layers grouped by CRS, each group
// with a `rasters` layer of footprints. The format (TaskOptions::format) decides only
// what the writers decide: its extension, one file for all layers or one per layer, and
// whether its file replaces the table. The tasks build each result once, as a record.
// The run's files are written as records come, under temporary names renamed by
// finish(): what a rank holds of them is bounded by what one add() is given.
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tasks/task_output.hpp"
#include "writers/records.hpp"
#include "writers/table_file.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime {

class ResultFiles {
 public:
  // `what` names the files and the result layer ("detections"); `fields` are the
  // records' fields (VectorField::Shown says which files show each). No fields: no
  // table and no result layer, only the run's `rasters` layer (segment).
  ResultFiles(const OutputPlan& plan, std::string what, std::vector<VectorField> fields);

  // Records of raster `image`, in the order the files list them (fake data: image 0, no
  // raster, the table only), appended to its files (per raster, completed by
  // finish_raster) or to the run's (completed by finish).
  void add(int image, std::span<const Record> records);
  // Raster `image`'s own files (per raster), complete: renamed and added to `written`.
  void finish_raster(int image, std::vector<std::filesystem::path>& written);
  // Raster `image`'s own files not made: their temporary files go.
  void abandon_raster(int image);
  // The run's files (nothing per raster), `outcomes` one per raster. Without it (a
  // stopped run, an error) the run's files are not made and their temporary ones go.
  void finish(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written);

 private:
  [[nodiscard]] bool run_layout() const;
  [[nodiscard]] bool table_written() const;
  [[nodiscard]] static bool in_table(const VectorField& field);
  [[nodiscard]] bool in_layer(const VectorField& field) const;
  // Where a layer goes: one of files_, and the layer's index in it.
  struct Slot {
    std::size_t file = 0;
    std::size_t layer = 0;
  };
  void open_run_files();
  // A raster's own files, open while its rows come.
  struct RasterFiles {
    std::optional<TableFile> table;
    std::optional<VectorFileWriter> layer;
    std::vector<std::filesystem::path> names;  // in the order written lists them
  };
  RasterFiles& raster_files(int image);

  const OutputPlan& plan_;
  std::string what_;
  std::vector<VectorField> fields_;
  std::vector<VectorField> table_fields_;
  std::vector<VectorField> layer_fields_;  // per raster, or the run's
  std::optional<TableFile> run_table_;     // the run's, once open_run_files ran
  std::vector<std::size_t> group_of_;      // per raster: its CRS group
  std::vector<std::string> suffixes_;      // per group: "" for the first, "_32618", ...
  std::vector<std::string> wkts_;          // per group: its first raster's CRS
  std::vector<VectorFileWriter> files_;    // the run's vector files, once open_run_files ran
  std::vector<std::filesystem::path> file_names_;
  std::vector<Slot> result_slots_;  // per group: its result layer (none without fields)
  std::vector<Slot> raster_slots_;  // per group: its `rasters` layer
  bool opened_ = false;
  std::map<int, RasterFiles> open_rasters_;
};

}  // namespace mgpr::runtime
