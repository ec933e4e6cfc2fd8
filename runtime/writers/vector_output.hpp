#pragma once
// The output-writer seam: records (records.hpp) become files through GDAL's vector
// drivers. One row of a table per format (vector_formats.cpp) says which driver writes
// it, its extension, whether one file holds many layers, and its limits; one writer
// (vector_layer.cpp) serves them all. The tasks see only this header and records.hpp:
// nothing of GDAL, and no format by name.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mgpr/run_choices.hpp"
#include "writers/records.hpp"

namespace mgpr::runtime {

struct VectorFormat {
  OutputFormat format = OutputFormat::kGeoPackage;
  std::string_view driver;     // GDAL's name
  std::string_view extension;  // of the file, with its dot
  bool many_layers = false;    // one file holds many layers; else one file per layer
  // The file takes the place of the table (records.hpp): it shows every field, and the
  // plain CSV is not written beside it.
  bool replaces_table = false;
  std::size_t field_name_limit = 0;            // longest field name the format keeps; 0: any
  std::span<const std::string_view> sidecars;  // files written beside the main one, by extension
};

const VectorFormat& vector_format(OutputFormat format);
// The format whose extension `file` has (case-insensitive); nullopt for none.
std::optional<OutputFormat> vector_format_of(const std::filesystem::path& file);
// `name` as `format` stores it: names longer than its limit get their short form
// (Shapefile: tile_column → tile_col; docs/outputs.md). Throws std::logic_error for a
// long name without one, so a new field cannot be cut silently.
std::string field_name_in(const VectorFormat& format, const std::string& name);

// Writes `layers`, in their order (names must differ), as `file`, in the format of its
// extension; a format with one layer per file takes one layer. Written under a
// temporary name (sidecars included) renamed when complete; the features in one
// transaction where the format has them. Throws std::invalid_argument for an unknown
// extension or records that do not match their fields, std::runtime_error naming the
// file and GDAL's message, UsageError in a build without GDAL.
void write_vector_layers(const std::filesystem::path& file, std::span<const RecordLayer> layers);

// The same, record by record: `layers` (their records ignored) are created at once under
// the temporary name; append() adds features to one of them, committed in transactions
// of a bounded size where the format has them, so a run's results can be written while
// it runs and memory stays flat in their number; commit() closes the file and renames
// it. Destroyed uncommitted (a stopped run, an error), the partial file is removed.
class VectorFileWriter {
 public:
  VectorFileWriter(const std::filesystem::path& file, std::span<const RecordLayer> layers);
  ~VectorFileWriter();
  VectorFileWriter(VectorFileWriter&&) noexcept;
  VectorFileWriter& operator=(VectorFileWriter&&) noexcept;

  // `records` into the layer at `layer`'s index among those given at creation.
  void append(std::size_t layer, std::span<const Record> records);
  void commit();

 private:
  void commit_features();
  struct Open;  // GDAL's dataset and layers, hidden from the tasks
  std::unique_ptr<Open> open_;
};

// One layer: `file` with the layer `layer` (`crs_wkt` empty: no CRS).
void write_vector_layer(const std::filesystem::path& file, const std::string& layer, const std::string& crs_wkt,
                        std::span<const VectorField> fields, std::span<const Record> records);

// The EPSG code of a CRS given as WKT, when it has one (named in the WKT, or identified
// by GDAL); nullopt for no CRS or one EPSG does not list (and in a build without GDAL).
std::optional<int> epsg_code(const std::string& crs_wkt);

}  // namespace mgpr::runtime
