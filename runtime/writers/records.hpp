#pragma once
// What a task hands the writers: records, each a geometry and its field values, in
// layers of one CRS. Nothing here knows a file format or GDAL: the tasks build every
// result once as a record, and the writers (vector_output.hpp) turn records into files.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "geometry/georef.hpp"

namespace mgpr::runtime {

struct VectorField {
  enum class Type { kInteger, kReal, kString };
  // Which files show the field. The table is the plain CSV the tasks have always written
  // (docs/outputs.md), the layers the vector files; a format that replaces the table
  // (CSV with WKT) shows every field. kTableAndRunLayer: the table, and the layers of
  // the run's files, where one layer holds many rasters.
  enum class Shown { kEverywhere, kTable, kLayer, kTableAndRunLayer };
  std::string name;
  Type type = Type::kReal;
  Shown shown = Shown::kEverywhere;
  // kReal in the table: 9 significant digits (a float32 read back exactly; model outputs)
  // rather than the shortest text that reads back the same double.
  bool nine_digits = false;
};

using FieldValue = std::variant<std::int64_t, double, std::string>;

// A polygon: its outer ring, then its holes; each ring any number of points, closed by
// the writer. A box's footprint converts to a polygon of one four-point ring.
struct Geometry {
  std::vector<std::vector<MapPoint>> rings;

  Geometry() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): a footprint is a polygon.
  Geometry(const std::array<MapPoint, 4>& corners) : rings{{corners.begin(), corners.end()}} {}
  explicit Geometry(std::vector<std::vector<MapPoint>> polygon_rings) : rings(std::move(polygon_rings)) {}
};

struct Record {
  Geometry geometry;
  std::vector<FieldValue> values;  // one per field, in the fields' order and types
};

// One layer: views of the caller's fields and records.
struct RecordLayer {
  std::string name;
  std::string crs_wkt;  // empty: no CRS (the coordinates are pixels)
  std::span<const VectorField> fields;
  std::span<const Record> records;
};

// The records' values as CSV text (docs/outputs.md's tables): a header of the field
// names, then one line per record; strings quoted when they hold a comma, a quote or a
// line break; no geometry. Byte for byte the tables the tasks wrote before records.
std::string table_header(std::span<const VectorField> fields);
std::string table_rows(std::span<const VectorField> fields, std::span<const Record> records);

// Fields of a CSV: quoted when they hold a comma, quote or newline.
std::string csv_field(const std::string& text);

// `fields` and `records` cut to the fields `keep` accepts, in their order.
template <typename Keep>
void select_fields(std::span<const VectorField> fields, std::span<const Record> records, Keep&& keep,
                   std::vector<VectorField>& kept_fields, std::vector<Record>& kept_records) {
  std::vector<std::size_t> columns;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (keep(fields[f])) {
      columns.push_back(f);
      kept_fields.push_back(fields[f]);
    }
  }
  kept_records.reserve(kept_records.size() + records.size());
  for (const auto& record : records) {
    Record cut{record.geometry, {}};
    cut.values.reserve(columns.size());
    for (const auto f : columns) cut.values.push_back(record.values.at(f));
    kept_records.push_back(std::move(cut));
  }
}

}  // namespace mgpr::runtime
