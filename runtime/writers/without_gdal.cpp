// A build without GDAL reads no rasters (fake data only), so it has no records to write
// as vector files and no raster to draw a quicklook of; the tasks' tables need no GDAL
// and are written all the same. These say so should anything ask.
#include "mgpr/error.hpp"
#include "writers/quicklook.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime {
namespace {

[[noreturn]] void no_gdal(const std::filesystem::path& file) {
  throw UsageError("cannot write '" + file.string() + "': this mgpr was built without GDAL; build it with GDAL");
}

}  // namespace

void write_vector_layers(const std::filesystem::path& file, std::span<const RecordLayer> /*layers*/) { no_gdal(file); }

void write_box_quicklook(const std::filesystem::path& png, const QuicklookSource& /*source*/,
                         std::span<const Box> /*boxes*/) {
  no_gdal(png);
}

struct VectorFileWriter::Open {};
VectorFileWriter::VectorFileWriter(const std::filesystem::path& file, std::span<const RecordLayer> /*layers*/,
                                   std::span<const std::pair<std::string, std::string>> /*run_settings*/) {
  no_gdal(file);
}
VectorFileWriter::~VectorFileWriter() = default;
VectorFileWriter::VectorFileWriter(VectorFileWriter&&) noexcept = default;
VectorFileWriter& VectorFileWriter::operator=(VectorFileWriter&&) noexcept = default;
void VectorFileWriter::append(std::size_t /*layer*/, std::span<const Record> /*records*/) {}
void VectorFileWriter::commit() {}
void VectorFileWriter::commit_features() {}

std::optional<int> epsg_code(const std::string& /*crs_wkt*/) { return std::nullopt; }

}  // namespace mgpr::runtime
