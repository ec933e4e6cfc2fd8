#pragma once
// The files of a task's records, for every task and every format (docs/outputs.md): per
// raster, the table <prefix>_<what>.csv and the vector file <prefix>_<what>.<ext> (layer
// <what>); for the run, run_<what>.csv and the vector layers grouped by CRS, each group
// with a `rasters` layer of footprints. The format (TaskOptions::format) decides only
// what the writers decide: its extension, one file for all layers or one per layer, and
// whether its file replaces the table. The tasks build each result once, as a record.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "tasks/task_output.hpp"
#include "writers/records.hpp"

namespace mgpr::runtime {

class ResultFiles {
 public:
  // `what` names the files and the result layer ("detections"); `fields` are the
  // records' fields (VectorField::Shown says which files show each). No fields: no
  // table and no result layer, only the run's `rasters` layer (segment).
  ResultFiles(const OutputPlan& plan, std::string what, std::vector<VectorField> fields);

  // The records of raster `image`, in the order the files list them (fake data: image 0,
  // no raster, the table only). Per raster its files are written now and added to
  // `written`; for the run they are kept for finish().
  void add(int image, std::span<const Record> records, std::vector<std::filesystem::path>& written);
  // The run's files (nothing per raster), `outcomes` one per raster.
  void finish(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) const;

 private:
  [[nodiscard]] bool run_layout() const;
  [[nodiscard]] bool table_written() const;
  [[nodiscard]] static bool in_table(const VectorField& field);
  [[nodiscard]] bool in_layer(const VectorField& field) const;
  void write_layers(std::span<const RecordLayer> layers, std::vector<std::filesystem::path>& written) const;

  const OutputPlan& plan_;
  std::string what_;
  std::vector<VectorField> fields_;
  std::vector<VectorField> table_fields_;
  std::vector<VectorField> layer_fields_;  // per raster, or the run's
  std::string run_table_;                  // the run's, header included
  std::vector<std::size_t> group_of_;      // per raster: its CRS group
  std::vector<std::string> suffixes_;      // per group: "" for the first, "_32618", ...
  std::vector<std::string> wkts_;          // per group: its first raster's CRS
  std::vector<std::vector<Record>> kept_;  // per group: the run's records
};

}  // namespace mgpr::runtime
