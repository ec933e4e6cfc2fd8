#pragma once
// Vector results (tile footprints, detection boxes) as a GeoPackage layer of polygons in
// the raster's CRS. Written under a temporary name and renamed when complete, so an
// interrupted run never leaves a file that looks finished.
#include <cstdint>
#include <filesystem>
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

// Writes `file` (a .gpkg) with one polygon layer named `layer`. `crs_wkt` empty: no CRS.
// Replaces an existing file only once the new one is complete. Throws std::runtime_error
// naming the file and GDAL's message.
void write_polygon_layer(const std::filesystem::path& file, const std::string& layer, const std::string& crs_wkt,
                         std::span<const VectorField> fields, std::span<const PolygonFeature> features);

}  // namespace mgpr::runtime
