#include "writers/vector_layer.hpp"

#include <fmt/format.h>
#include <ogr_feature.h>
#include <ogr_geometry.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>

#include <stdexcept>

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

void write_polygon_layer(const std::filesystem::path& file, const std::string& layer, const std::string& crs_wkt,
                         std::span<const VectorField> fields, std::span<const PolygonFeature> features) {
  check_values(file, fields, features);
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  auto& gpkg = output::driver("GPKG", file);

  // Without a CRS the coordinates are pixels: GeoPackage's "undefined Cartesian" CRS
  // (srs_id -1), which GDAL picks for this name. Given nothing, GDAL would choose the
  // "undefined geographic" one and GIS tools would take pixels for degrees.
  const char* wkt = crs_wkt.empty() ? kUndefinedCartesian : crs_wkt.c_str();
  OGRSpatialReference crs;
  if (crs.importFromWkt(wkt) != OGRERR_NONE) output::fail(file, "its CRS is not valid WKT");
  // Coordinates come from the geotransform, which is always x = easting/longitude.
  crs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);

  output::PartialFile partial(file);
  GDALDatasetUniquePtr dataset(gpkg.Create(partial.path().c_str(), 0, 0, 0, GDT_Unknown, nullptr));
  if (!dataset) output::fail(file, "creating the GeoPackage failed");
  auto* out = dataset->CreateLayer(layer.c_str(), &crs, wkbPolygon, nullptr);
  if (out == nullptr) output::fail(file, fmt::format("creating layer '{}' failed", layer));
  for (const auto& field : fields) {
    OGRFieldDefn definition(field.name.c_str(), ogr_type(field.type));
    if (out->CreateField(&definition) != OGRERR_NONE) {
      output::fail(file, fmt::format("creating field '{}' failed", field.name));
    }
  }

  // One transaction: SQLite otherwise commits (and syncs) after every feature.
  if (dataset->StartTransaction() != OGRERR_NONE) output::fail(file, "starting a transaction failed");
  for (const auto& feature : features) {
    OGRFeature row(out->GetLayerDefn());
    set_values(row, feature.values);
    const OGRPolygon shape = polygon(feature.ring);
    row.SetGeometry(&shape);
    if (out->CreateFeature(&row) != OGRERR_NONE) output::fail(file, "writing a feature failed");
  }
  if (dataset->CommitTransaction() != OGRERR_NONE) output::fail(file, "committing the features failed");
  output::close(dataset, file);
  partial.commit();
}

}  // namespace mgpr::runtime
