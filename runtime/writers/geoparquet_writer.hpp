#pragma once
// output_format=parquet: a GeoParquet 1.1 dataset, a folder of parts, written with Arrow
// C++ and Parquet (the pyarrow wheel's, scripts/fetch-arrow). The format's row holds one
// layer a folder (one schema, one CRS: the tasks group a run's rasters by CRS, a folder
// each), its parts rolled over every kRowsPerPart rows, so a run's parts hold groups of
// rasters, in the order they were written; each row group's rows packed in the Hilbert
// order of their boxes
// (geoparquet_layout.hpp), ZSTD. The folder is written under a temporary name and renamed
// once complete, its _manifest.json last. The header knows nothing of Arrow: builds
// without it refuse the format (geoparquet_available()).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "writers/records.hpp"

namespace mgpr::runtime::output {

inline constexpr std::int64_t kRowsPerGroup = 65536;
inline constexpr std::int64_t kRowsPerPart = 64 * kRowsPerGroup;

// Whether this build writes GeoParquet.
bool geoparquet_available();

class GeoParquetDataset {
 public:
  // `folder`: the dataset, made under a temporary name beside it. Throws UsageError in a
  // build without Arrow, std::runtime_error naming the folder when it cannot be made.
  // `run_settings`: what the results depend on, for the manifest.
  GeoParquetDataset(const std::filesystem::path& folder, std::span<const RecordLayer> layers,
                    std::span<const std::pair<std::string, std::string>> run_settings = {});
  ~GeoParquetDataset();  // uncommitted: the temporary folder goes
  GeoParquetDataset(const GeoParquetDataset&) = delete;
  GeoParquetDataset& operator=(const GeoParquetDataset&) = delete;

  void append(std::size_t layer, std::span<const Record> records);
  void commit();

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace mgpr::runtime::output
