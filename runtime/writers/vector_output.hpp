#pragma once
// The output-writer seam: records (records.hpp) become files. Each format is a row of
// one table (vector_formats.hpp): its names, extension, creation options, limits, layers,
// CRS, index and the writer that writes it; GDAL's vector writer (vector_layer.cpp)
// serves every row today, reading its differences from the row. The tasks see only this
// header and records.hpp: nothing of GDAL, and no format by name.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "writers/records.hpp"
#include "writers/vector_formats.hpp"

namespace mgpr::runtime {

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
// `run_settings` (name, value: what the results depend on) go where the format keeps
// provenance: GeoParquet's manifest.
class VectorFileWriter {
 public:
  VectorFileWriter(const std::filesystem::path& file, std::span<const RecordLayer> layers,
                   std::span<const std::pair<std::string, std::string>> run_settings = {});
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
