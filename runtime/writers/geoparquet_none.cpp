// A build without Arrow (MGPR_ARROW_DIR unset): output_format=parquet is refused.
#include "mgpr/error.hpp"
#include "writers/geoparquet_writer.hpp"

namespace mgpr::runtime::output {

bool geoparquet_available() { return false; }

struct GeoParquetDataset::Parts {};

GeoParquetDataset::GeoParquetDataset(const std::filesystem::path& folder, std::span<const RecordLayer> /*layers*/,
                                     std::span<const std::pair<std::string, std::string>> /*run_settings*/) {
  throw UsageError(
      "output_format=parquet: this build of mgpr has no GeoParquet writer (" + folder.string() +
      "); build it with Arrow (scripts/build fetches it: scripts/fetch-arrow) or choose output_format=gpkg");
}
GeoParquetDataset::~GeoParquetDataset() = default;
void GeoParquetDataset::append(std::size_t /*layer*/, std::span<const Record> /*records*/) {}
void GeoParquetDataset::commit() {}

}  // namespace mgpr::runtime::output
