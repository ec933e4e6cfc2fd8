#pragma once
// Vector results (tile footprints, detection boxes, raster footprints) as GeoPackage
// layers of polygons, each in one CRS. Written under a temporary name and renamed when
// complete, so an interrupted run never leaves a file that looks finished.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "geometry/georef.hpp"

namespace mgpr::runtime {

struct VectorField {
  enum class Type { kInteger, kReal, kString };
  std::string name;
  Type type = Type::kReal;
};

using FieldValue = std::variant<std::int64_t, double, std::string>;

struct PolygonFeature {
  std::array<MapPoint, 4> ring;    // closed by the writer
  std::vector<FieldValue> values;  // one per field, in the fields' order and types
};

// One polygon layer of a GeoPackage; views of the caller's fields and features.
struct PolygonLayer {
  std::string name;
  std::string crs_wkt;  // empty: no CRS (GeoPackage's "undefined Cartesian")
  std::span<const VectorField> fields;
  std::span<const PolygonFeature> features;
};

// Writes `file` (a .gpkg) with `layers`, in their order (names must differ), every
// feature of every layer in one transaction: hundreds of thousands of features take
// seconds, not one disk sync each. Replaces an existing file only once the new one is
// complete. Throws std::runtime_error naming the file and GDAL's message.
void write_polygon_layers(const std::filesystem::path& file, std::span<const PolygonLayer> layers);

// The EPSG code of a CRS given as WKT, when it has one (named in the WKT, or identified
// by GDAL); nullopt for no CRS or one EPSG does not list.
std::optional<int> epsg_code(const std::string& crs_wkt);

// Writes `file` (a .gpkg) with one polygon layer named `layer`. `crs_wkt` empty: no CRS.
// Replaces an existing file only once the new one is complete. Throws std::runtime_error
// naming the file and GDAL's message.
void write_polygon_layer(const std::filesystem::path& file, const std::string& layer, const std::string& crs_wkt,
                         std::span<const VectorField> fields, std::span<const PolygonFeature> features);

}  // namespace mgpr::runtime
