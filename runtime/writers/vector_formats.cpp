// The vector formats mgpr writes, one row each (vector_formats.hpp): adding a format is a
// row here, its value and name in mgpr/run_choices.hpp (the values of output_format=) and
// its test in tests/runtime/writers/vector_formats_test.cpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include "writers/vector_output.hpp"

namespace mgpr::runtime {
namespace {

constexpr std::array<std::string_view, 4> kShapefileSidecars{".shx", ".dbf", ".prj", ".cpg"};

// Shapefile in UTF-8 (a .cpg says so), refusing to grow past 2 GB, where readers other
// than GDAL stop.
constexpr std::array<CreationOption, 2> kShapefileLayerOptions{{{"ENCODING", "UTF-8"}, {"2GB_LIMIT", "YES"}}};
// CSV with the geometry as WKT (and no .csvt beside it), text quoted only where it must
// be, as in the plain CSV (GDAL would quote every integer it keeps as text).
constexpr std::array<CreationOption, 3> kCsvLayerOptions{
    {{"GEOMETRY", "AS_WKT"}, {"CREATE_CSVT", "NO"}, {"STRING_QUOTING", "IF_NEEDED"}}};

// The widest text field dBASE holds; GDAL's default (80) would cut long raster paths.
constexpr int kDbaseTextWidth = 254;

// In OutputFormat's order (checked below).
constexpr std::array<VectorFormat, 6> kFormats{{
    {.format = OutputFormat::kGeoPackage,
     .name = "gpkg",
     .writer = VectorWriterKind::kGdal,
     .driver = "GPKG",
     .extension = ".gpkg",
     .sidecars = {},
     .dataset_options = {},
     .layer_options = {},
     .many_layers = true,
     .replaces_table = false,
     .field_name_limit = 0,
     .text_width = 0,
     .undefined_crs = UndefinedCrs::kUndefinedCartesian,
     .geometry_index = GeometryIndex::kGpkgRtree},
    {.format = OutputFormat::kFlatGeobuf,
     .name = "fgb",
     .writer = VectorWriterKind::kGdal,
     .driver = "FlatGeobuf",
     .extension = ".fgb",
     .sidecars = {},
     .dataset_options = {},
     .layer_options = {},
     .many_layers = false,
     .replaces_table = false,
     .field_name_limit = 0,
     .text_width = 0,
     .undefined_crs = UndefinedCrs::kNone,
     .geometry_index = GeometryIndex::kByDriver},  // its features in the index's order
    {.format = OutputFormat::kGeoJson,
     .name = "geojson",
     .writer = VectorWriterKind::kGdal,
     .driver = "GeoJSON",
     .extension = ".geojson",
     .sidecars = {},
     .dataset_options = {},
     .layer_options = {},
     .many_layers = false,
     .replaces_table = false,
     .field_name_limit = 0,
     .text_width = 0,
     .undefined_crs = UndefinedCrs::kNone,
     .geometry_index = GeometryIndex::kNone},
    {.format = OutputFormat::kShapefile,
     .name = "shp",
     .writer = VectorWriterKind::kGdal,
     .driver = "ESRI Shapefile",
     .extension = ".shp",
     .sidecars = kShapefileSidecars,
     .dataset_options = {},
     .layer_options = kShapefileLayerOptions,
     .many_layers = false,
     .replaces_table = false,
     .field_name_limit = 10,  // dBASE's
     .text_width = kDbaseTextWidth,
     .undefined_crs = UndefinedCrs::kNone,
     .geometry_index = GeometryIndex::kNone},
    {.format = OutputFormat::kCsv,
     .name = "csv",
     .writer = VectorWriterKind::kGdal,
     .driver = "CSV",
     .extension = ".csv",
     .sidecars = {},
     .dataset_options = {},
     .layer_options = kCsvLayerOptions,
     .many_layers = false,
     .replaces_table = true,
     .field_name_limit = 0,
     .text_width = 0,
     .undefined_crs = UndefinedCrs::kNone,
     .geometry_index = GeometryIndex::kNone},
    // A folder of parts of one layer, one schema (geoparquet_writer.hpp), so that the
    // folder reads as one table; each row group packed in spatial order, with its
    // covering box column: no index beside it.
    {.format = OutputFormat::kGeoParquet,
     .name = "parquet",
     .writer = VectorWriterKind::kGeoParquet,
     .driver = "GeoParquet",
     .extension = ".parquet",
     .sidecars = {},
     .dataset_options = {},
     .layer_options = {},
     .many_layers = false,
     .replaces_table = false,
     .field_name_limit = 0,
     .text_width = 0,
     .undefined_crs = UndefinedCrs::kNone,
     .geometry_index = GeometryIndex::kNone},
}};

// vector_format() indexes the table by the enum's value, and output_format= accepts
// run_choices.hpp's names: a format added to one and not the other fails the build here.
constexpr bool rows_follow_the_enum_and_its_names() {
  if (kFormats.size() != kOutputFormatNames.size()) return false;
  for (std::size_t i = 0; i < kFormats.size(); ++i) {
    if (static_cast<std::size_t>(kFormats[i].format) != i || kFormats[i].name != kOutputFormatNames[i]) return false;
  }
  return true;
}
static_assert(rows_follow_the_enum_and_its_names(),
              "kFormats must hold one row per OutputFormat, in its order, named as in kOutputFormatNames");

// The short forms of the fields' names longer than ten characters (dBASE's limit).
const std::map<std::string, std::string, std::less<>> kShortNames{{"tile_column", "tile_col"},
                                                                  {"crop_label_name", "crop_name"}};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

std::span<const VectorFormat> vector_formats() { return kFormats; }

const VectorFormat& vector_format(OutputFormat format) { return kFormats.at(static_cast<std::size_t>(format)); }

std::optional<OutputFormat> vector_format_of(const std::filesystem::path& file) {
  const auto extension = lower(file.extension().string());
  for (const auto& format : kFormats) {
    if (format.extension == extension) return format.format;
  }
  return std::nullopt;
}

std::string field_name_in(const VectorFormat& format, const std::string& name) {
  if (format.field_name_limit == 0 || name.size() <= format.field_name_limit) return name;
  const auto found = kShortNames.find(name);
  if (found == kShortNames.end() || found->second.size() > format.field_name_limit) {
    throw std::logic_error(
        fmt::format("field '{}' is too long for {} and has no short name in vector_formats.cpp", name, format.driver));
  }
  return found->second;
}

void write_vector_layer(const std::filesystem::path& file, const std::string& layer, const std::string& crs_wkt,
                        std::span<const VectorField> fields, std::span<const Record> records) {
  const std::array<RecordLayer, 1> one{{{layer, crs_wkt, fields, records}}};
  write_vector_layers(file, one);
}

}  // namespace mgpr::runtime
