#include "writers/vector_layer.hpp"

#include <fmt/format.h>
#include <ogr_feature.h>
#include <ogr_geometry.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>

#include <stdexcept>
#include <string_view>
#include <vector>

#include "writers/gdal_write.hpp"

namespace mgpr::runtime {
namespace {

constexpr const char* kUndefinedCartesian =
    R"(LOCAL_CS["Undefined Cartesian SRS",UNIT["Meter",1],AXIS["Easting",EAST],AXIS["Northing",NORTH]])";

OGRFieldType ogr_type(VectorField::Type type) {
  switch (type) {
    case VectorField::Type::kInteger:
      return OFTInteger64;
    case VectorField::Type::kReal:
      return OFTReal;
    case VectorField::Type::kString:
      return OFTString;
  }
  return OFTString;
}

// The variant's alternatives are in the same order as VectorField::Type's values.
void check_values(const std::filesystem::path& file, std::span<const VectorField> fields,
                  std::span<const PolygonFeature> features) {
  for (std::size_t i = 0; i < features.size(); ++i) {
    const auto& values = features[i].values;
    if (values.size() != fields.size()) {
      throw std::invalid_argument(
          fmt::format("'{}': feature {} has {} values for {} fields", file.string(), i, values.size(), fields.size()));
    }
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (values[f].index() != static_cast<std::size_t>(fields[f].type)) {
        throw std::invalid_argument(fmt::format("'{}': feature {} has a value of the wrong type for field '{}'",
                                                file.string(), i, fields[f].name));
      }
    }
  }
}

void set_values(OGRFeature& feature, const std::vector<FieldValue>& values) {
  for (std::size_t f = 0; f < values.size(); ++f) {
    const int index = static_cast<int>(f);
    if (const auto* integer = std::get_if<std::int64_t>(&values[f])) {
      feature.SetField(index, static_cast<GIntBig>(*integer));
    } else if (const auto* real = std::get_if<double>(&values[f])) {
      feature.SetField(index, *real);
    } else {
      feature.SetField(index, std::get<std::string>(values[f]).c_str());
    }
  }
}

OGRPolygon polygon(const std::array<MapPoint, 4>& corners) {
  OGRLinearRing ring;
  for (const auto& corner : corners) ring.addPoint(corner.x, corner.y);
  ring.closeRings();
  OGRPolygon result;
  result.addRing(&ring);
  return result;
}

}  // namespace

void write_polygon_layers(const std::filesystem::path& file, std::span<const PolygonLayer> layers) {
  for (const auto& layer : layers) check_values(file, layer.fields, layer.features);
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  auto& gpkg = output::driver("GPKG", file);

  std::vector<OGRSpatialReference> crs(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    // Without a CRS the coordinates are pixels: GeoPackage's "undefined Cartesian" CRS
    // (srs_id -1), which GDAL picks for this name. Given nothing, GDAL would choose the
    // "undefined geographic" one and GIS tools would take pixels for degrees.
    const char* wkt = layers[i].crs_wkt.empty() ? kUndefinedCartesian : layers[i].crs_wkt.c_str();
    if (crs[i].importFromWkt(wkt) != OGRERR_NONE) output::fail(file, "its CRS is not valid WKT");
    // Coordinates come from the geotransform, which is always x = easting/longitude.
    crs[i].SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
  }

  output::PartialFile partial(file);
  GDALDatasetUniquePtr dataset(gpkg.Create(partial.path().c_str(), 0, 0, 0, GDT_Unknown, nullptr));
  if (!dataset) output::fail(file, "creating the GeoPackage failed");
  std::vector<OGRLayer*> created;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto* out = dataset->CreateLayer(layers[i].name.c_str(), &crs[i], wkbPolygon, nullptr);
    if (out == nullptr) output::fail(file, fmt::format("creating layer '{}' failed", layers[i].name));
    for (const auto& field : layers[i].fields) {
      OGRFieldDefn definition(field.name.c_str(), ogr_type(field.type));
      if (out->CreateField(&definition) != OGRERR_NONE) {
        output::fail(file, fmt::format("creating field '{}' failed", field.name));
      }
    }
    created.push_back(out);
  }

  // One transaction: SQLite otherwise commits (and syncs) after every feature.
  if (dataset->StartTransaction() != OGRERR_NONE) output::fail(file, "starting a transaction failed");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    for (const auto& feature : layers[i].features) {
      OGRFeature row(created[i]->GetLayerDefn());
      set_values(row, feature.values);
      const OGRPolygon shape = polygon(feature.ring);
      row.SetGeometry(&shape);
      if (created[i]->CreateFeature(&row) != OGRERR_NONE) output::fail(file, "writing a feature failed");
    }
  }
  if (dataset->CommitTransaction() != OGRERR_NONE) output::fail(file, "committing the features failed");
  output::close(dataset, file);
  partial.commit();
}

void write_polygon_layer(const std::filesystem::path& file, const std::string& layer, const std::string& crs_wkt,
                         std::span<const VectorField> fields, std::span<const PolygonFeature> features) {
  const std::array<PolygonLayer, 1> one{{{layer, crs_wkt, fields, features}}};
  write_polygon_layers(file, one);
}

std::optional<int> epsg_code(const std::string& crs_wkt) {
  if (crs_wkt.empty()) return std::nullopt;
  const GdalErrorScope errors(GdalErrorScope::Warnings::kQuiet);
  OGRSpatialReference crs;
  if (crs.importFromWkt(crs_wkt.c_str()) != OGRERR_NONE) return std::nullopt;
  const auto code_of = [&]() -> std::optional<int> {
    const char* authority = crs.GetAuthorityName(nullptr);
    const char* code = crs.GetAuthorityCode(nullptr);
    if (authority == nullptr || code == nullptr || std::string_view(authority) != "EPSG") return std::nullopt;
    try {
      return std::stoi(code);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  if (const auto code = code_of()) return code;
  if (crs.AutoIdentifyEPSG() != OGRERR_NONE) return std::nullopt;
  return code_of();
}

}  // namespace mgpr::runtime
