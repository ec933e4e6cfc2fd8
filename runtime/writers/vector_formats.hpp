#pragma once
// A vector format is its row: everything that sets one format apart from another (its
// names, file, creation options, limits, layers, CRS and index, and the writer that
// writes it) is a field of one row of vector_formats.cpp's table, and the writers read
// the row instead of asking which format they write. Adding a format is a row there and
// its test; its enum value and name in mgpr/run_choices.hpp, which the configuration
// reads without the writers, must agree with the row, or the build fails.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mgpr/run_choices.hpp"

namespace mgpr::runtime {

// The writer that turns records into a format's files: GDAL's vector drivers
// (vector_layer.cpp), or, for a format GDAL writes too slowly or not at all, one of the
// project's own, to which VectorFileWriter hands its rows: GeoParquet's with Arrow
// (geoparquet_writer.hpp; Debian's GDAL 3.6 has no Parquet driver).
enum class VectorWriterKind { kGdal, kGeoParquet };

// What a layer without a CRS (its coordinates are pixels) is written with.
enum class UndefinedCrs {
  kNone,  // no CRS at all
  // GeoPackage's "undefined Cartesian" CRS (srs_id -1). Given nothing, GDAL would write
  // its "undefined geographic" one, and GIS tools would take pixels for degrees.
  kUndefinedCartesian,
};

// The spatial index a file gets.
enum class GeometryIndex {
  kNone,
  kByDriver,   // the driver builds one as it closes the file (FlatGeobuf's, by default)
  kGpkgRtree,  // GeoPackage's R-tree, packed as features come (gpkg_rtree.hpp)
};

// A creation option as the writer is given it (GDAL's NAME=VALUE).
struct CreationOption {
  std::string_view name;
  std::string_view value;
};

struct VectorFormat {
  OutputFormat format = OutputFormat::kGeoPackage;
  std::string_view name;  // the value of output_format= (kOutputFormatNames)
  VectorWriterKind writer = VectorWriterKind::kGdal;
  std::string_view driver;                     // GDAL's name of the format (or the writer's, in messages)
  std::string_view extension;                  // of the file, with its dot
  std::span<const std::string_view> sidecars;  // files written beside the main one, by extension
  std::span<const CreationOption> dataset_options;
  std::span<const CreationOption> layer_options;
  bool many_layers = false;  // one file holds many layers; else one file per layer
  // The file takes the place of the table (records.hpp): it shows every field, and the
  // plain CSV is not written beside it.
  bool replaces_table = false;
  std::size_t field_name_limit = 0;  // longest field name the format keeps; 0: any
  int text_width = 0;                // the width of text fields; 0: the driver's default
  UndefinedCrs undefined_crs = UndefinedCrs::kNone;
  GeometryIndex geometry_index = GeometryIndex::kNone;
};

// Every row, in OutputFormat's order.
std::span<const VectorFormat> vector_formats();
const VectorFormat& vector_format(OutputFormat format);
// The format whose extension `file` has (case-insensitive); nullopt for none.
std::optional<OutputFormat> vector_format_of(const std::filesystem::path& file);
// `name` as `format` stores it: names longer than its limit get their short form
// (Shapefile: tile_column → tile_col; docs/outputs.md). Throws std::logic_error for a
// long name without one, so a new field cannot be cut silently.
std::string field_name_in(const VectorFormat& format, const std::string& name);

}  // namespace mgpr::runtime
