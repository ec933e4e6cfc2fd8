// The vector formats mgpr writes, one row each: adding a format is a row here, its name
// in mgpr/run_choices.hpp (the values of output_format=) and a test.
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

// In OutputFormat's order.
const std::array<VectorFormat, 5> kFormats{{
    {OutputFormat::kGeoPackage, "GPKG", ".gpkg", true, false, 0, {}},
    {OutputFormat::kFlatGeobuf, "FlatGeobuf", ".fgb", false, false, 0, {}},
    {OutputFormat::kGeoJson, "GeoJSON", ".geojson", false, false, 0, {}},
    {OutputFormat::kShapefile, "ESRI Shapefile", ".shp", false, false, 10, kShapefileSidecars},
    {OutputFormat::kCsv, "CSV", ".csv", false, true, 0, {}},
}};

// The short forms of the fields' names longer than ten characters (dBASE's limit).
const std::map<std::string, std::string, std::less<>> kShortNames{{"tile_column", "tile_col"},
                                                                  {"crop_label_name", "crop_name"}};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

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
