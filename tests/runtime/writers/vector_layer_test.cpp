// write_vector_layer: the GeoPackage read back with OGR has the layer, fields, values,
// exact polygon corners (rotated geotransforms included) and CRS it was given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ogrsf_frmts.h>
#include <unistd.h>

#include <array>
#include <stdexcept>

#include "read_back.hpp"
#include "support/rasters.hpp"
#include "writers/vector_output.hpp"

namespace {

using mgpr::runtime::FieldValue;
using mgpr::runtime::GeoTransform;
using mgpr::runtime::MapPoint;
using mgpr::runtime::Record;
using mgpr::runtime::VectorField;
using mgpr::runtime::write_vector_layer;
using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::HasSubstr;

const std::array<VectorField, 3> kFields{{{"tile_row", VectorField::Type::kInteger},
                                          {"score", VectorField::Type::kReal},
                                          {"label", VectorField::Type::kString}}};

// Rotated and sheared, so a writer that used (min, max) pairs would get the corners wrong.
const GeoTransform kRotated(std::array<double, 6>{500000.25, 0.5, 0.125, 4500000.75, 0.0625, -0.5});

std::vector<Record> two_features() {
  return {{kRotated.footprint(10, 20, 30, 50), {std::int64_t{3}, 0.875, std::string("tree")}},
          {kRotated.footprint(0, 0, 5, 5), {std::int64_t{-1}, 0.5, std::string("roof, with comma")}}};
}

void expect_ring(const OGRGeometry* geometry, const mgpr::runtime::Geometry& polygon) {
  ASSERT_EQ(polygon.rings.size(), 1U);
  const auto& corners = polygon.rings.front();
  ASSERT_NE(geometry, nullptr);
  ASSERT_EQ(wkbFlatten(geometry->getGeometryType()), wkbPolygon);
  const auto* ring = geometry->toPolygon()->getExteriorRing();
  ASSERT_EQ(ring->getNumPoints(), 5);  // closed
  for (int i = 0; i < 5; ++i) {
    const auto& corner = corners[static_cast<std::size_t>(i % 4)];
    EXPECT_EQ(ring->getX(i), corner.x) << "point " << i;
    EXPECT_EQ(ring->getY(i), corner.y) << "point " << i;
  }
}

std::string error_of(const std::filesystem::path& file) {
  return mgpr::test::runtime_error_of([&] { write_vector_layer(file, "boxes", "", kFields, two_features()); });
}

TEST(VectorLayer, WritesLayerFieldsPolygonsAndCrs) {
  TempDir scratch;
  const auto file = scratch.path() / "boxes.gpkg";
  const auto wkt = mgpr::test::epsg_wkt(32633);
  const auto features = two_features();
  write_vector_layer(file, "detections", wkt, kFields, features);

  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("boxes.gpkg"));
  const auto dataset = mgpr::test::open_dataset(file, GDAL_OF_VECTOR);
  EXPECT_STREQ(dataset->GetDriver()->GetDescription(), "GPKG");
  ASSERT_EQ(dataset->GetLayerCount(), 1);
  auto* layer = dataset->GetLayer(0);
  EXPECT_STREQ(layer->GetName(), "detections");
  EXPECT_EQ(wkbFlatten(layer->GetGeomType()), wkbPolygon);
  const auto expected_srs = mgpr::test::srs_from_wkt(wkt);
  ASSERT_NE(layer->GetSpatialRef(), nullptr);
  EXPECT_TRUE(layer->GetSpatialRef()->IsSame(&expected_srs));

  auto* definition = layer->GetLayerDefn();
  ASSERT_EQ(definition->GetFieldCount(), 3);
  EXPECT_STREQ(definition->GetFieldDefn(0)->GetNameRef(), "tile_row");
  EXPECT_EQ(definition->GetFieldDefn(0)->GetType(), OFTInteger64);
  EXPECT_EQ(definition->GetFieldDefn(1)->GetType(), OFTReal);
  EXPECT_EQ(definition->GetFieldDefn(2)->GetType(), OFTString);

  ASSERT_EQ(layer->GetFeatureCount(), 2);
  layer->ResetReading();
  OGRFeatureUniquePtr first(layer->GetNextFeature());
  OGRFeatureUniquePtr second(layer->GetNextFeature());
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->GetFieldAsInteger64(0), 3);
  EXPECT_EQ(first->GetFieldAsDouble(1), 0.875);
  EXPECT_STREQ(first->GetFieldAsString(2), "tree");
  EXPECT_EQ(second->GetFieldAsInteger64(0), -1);
  EXPECT_STREQ(second->GetFieldAsString(2), "roof, with comma");
  expect_ring(first->GetGeometryRef(), features[0].geometry);
  expect_ring(second->GetGeometryRef(), features[1].geometry);
}

TEST(VectorLayer, ReplacesAnEarlierFileAndWritesPixelCoordinatesAsCartesian) {
  TempDir scratch;
  const auto file = scratch.path() / "tiles.gpkg";
  write_vector_layer(file, "tiles", mgpr::test::epsg_wkt(4326), kFields, two_features());
  const std::vector<Record> one{two_features().front()};
  write_vector_layer(file, "tiles", "", kFields, one);

  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("tiles.gpkg"));
  const auto dataset = mgpr::test::open_dataset(file, GDAL_OF_VECTOR);
  auto* layer = dataset->GetLayer(0);
  EXPECT_EQ(layer->GetFeatureCount(), 1);
  // GeoPackage has no "none": pixel coordinates are its undefined Cartesian CRS, never
  // the undefined geographic one (which would read them as degrees).
  const auto* srs = layer->GetSpatialRef();
  ASSERT_NE(srs, nullptr);
  EXPECT_TRUE(srs->IsLocal());
  EXPECT_FALSE(srs->IsGeographic());
}

TEST(VectorLayer, EmptyLayerIsStillALayer) {
  TempDir scratch;
  const auto file = scratch.path() / "none.gpkg";
  write_vector_layer(file, "detections", "", kFields, {});
  const auto dataset = mgpr::test::open_dataset(file, GDAL_OF_VECTOR);
  ASSERT_NE(dataset->GetLayerByName("detections"), nullptr);
  EXPECT_EQ(dataset->GetLayerByName("detections")->GetFeatureCount(), 0);
}

TEST(VectorLayer, MissingFolderFailsNamingTheFile) {
  TempDir scratch;
  const auto file = scratch.path() / "no-such-folder" / "boxes.gpkg";
  EXPECT_THAT(error_of(file), HasSubstr("'" + file.string() + "'"));
  EXPECT_TRUE(mgpr::test::names_in(scratch.path()).empty());
}

TEST(VectorLayer, ReadOnlyFolderFailsNamingTheFile) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write into a read-only folder";
  TempDir scratch;
  const auto folder = scratch.path() / "read-only";
  std::filesystem::create_directories(folder);
  std::filesystem::permissions(folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  const auto file = folder / "boxes.gpkg";
  EXPECT_THAT(error_of(file), HasSubstr("'" + file.string() + "'"));
  std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
  EXPECT_TRUE(mgpr::test::names_in(folder).empty());
}

// Everything is written, then the rename fails (a folder is in the way): the error names
// the target and the complete temporary file is removed, not left behind.
TEST(VectorLayer, FailedRenameLeavesNoTemporaryFile) {
  TempDir scratch;
  const auto file = scratch.path() / "boxes.gpkg";
  std::filesystem::create_directories(file / "occupied");
  EXPECT_THAT(error_of(file), HasSubstr("'" + file.string() + "'"));
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("boxes.gpkg"));
  EXPECT_TRUE(std::filesystem::is_directory(file));
}

TEST(VectorLayer, ValuesMustMatchTheFields) {
  TempDir scratch;
  const auto file = scratch.path() / "boxes.gpkg";
  std::vector<Record> wrong_type{{kRotated.footprint(0, 0, 1, 1), {1.0, 0.5, std::string("x")}}};
  EXPECT_THROW(write_vector_layer(file, "boxes", "", kFields, wrong_type), std::invalid_argument);
  std::vector<Record> too_few{{kRotated.footprint(0, 0, 1, 1), {std::int64_t{1}}}};
  EXPECT_THROW(write_vector_layer(file, "boxes", "", kFields, too_few), std::invalid_argument);
  EXPECT_TRUE(mgpr::test::names_in(scratch.path()).empty());
}

// Several layers in one file (a run's results and its raster footprints, a
// pair per CRS), each with its own CRS and fields; a large layer is written in one
// transaction (the test would take minutes with a sync per feature).
TEST(VectorLayer, SeveralLayersInOneFileEachWithItsCrs) {
  TempDir scratch;
  const auto file = scratch.path() / "run.gpkg";
  const std::array<VectorField, 1> names{{{"raster", VectorField::Type::kString}}};
  std::vector<Record> many;
  for (int i = 0; i < 50000; ++i) {
    many.push_back({kRotated.footprint(i % 100, i / 100, i % 100 + 1, i / 100 + 1), {std::string("a.tif")}});
  }
  const auto features = two_features();
  const std::vector<mgpr::runtime::RecordLayer> layers{{"detections", mgpr::test::epsg_wkt(32633), kFields, features},
                                                       {"rasters", mgpr::test::epsg_wkt(32633), names, many},
                                                       {"rasters_32618", mgpr::test::epsg_wkt(32618), names, {}}};
  mgpr::runtime::write_vector_layers(file, layers);

  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("run.gpkg"));
  const auto dataset = mgpr::test::open_dataset(file, GDAL_OF_VECTOR);
  ASSERT_EQ(dataset->GetLayerCount(), 3);
  EXPECT_EQ(dataset->GetLayerByName("detections")->GetFeatureCount(), 2);
  EXPECT_EQ(dataset->GetLayerByName("detections")->GetLayerDefn()->GetFieldCount(), 3);
  auto* rasters = dataset->GetLayerByName("rasters");
  ASSERT_NE(rasters, nullptr);
  EXPECT_EQ(rasters->GetFeatureCount(), 50000);
  EXPECT_STREQ(rasters->GetLayerDefn()->GetFieldDefn(0)->GetNameRef(), "raster");
  auto* other = dataset->GetLayerByName("rasters_32618");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->GetFeatureCount(), 0);
  const auto utm18 = mgpr::test::srs_from_wkt(mgpr::test::epsg_wkt(32618));
  ASSERT_NE(other->GetSpatialRef(), nullptr);
  EXPECT_TRUE(other->GetSpatialRef()->IsSame(&utm18));
}

TEST(VectorLayer, EpsgCodeOfACrs) {
  EXPECT_EQ(mgpr::runtime::epsg_code(mgpr::test::epsg_wkt(32618)), 32618);
  EXPECT_EQ(mgpr::runtime::epsg_code(mgpr::test::epsg_wkt(4326)), 4326);
  EXPECT_EQ(mgpr::runtime::epsg_code(""), std::nullopt);
  EXPECT_EQ(mgpr::runtime::epsg_code("not wkt"), std::nullopt);
  EXPECT_EQ(mgpr::runtime::epsg_code(R"(LOCAL_CS["somewhere",UNIT["Meter",1]])"), std::nullopt);
}

}  // namespace
