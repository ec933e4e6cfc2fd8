// The GeoPackage's spatial index written as features come (writers/gpkg_rtree.hpp): for
// feature counts around the tree's node size (0, 1, a leaf, a leaf and one, a level of
// leaves and one), SQLite's own rtreecheck() finds the tree sound, it holds every
// feature, GDAL's spatial filter (which reads the index) finds in a window what a look at
// every feature finds, and the triggers are back, so that a feature added later by
// another tool is found through the index too.
#include <gtest/gtest.h>
#include <ogrsf_frmts.h>
#include <sqlite3.h>

#include <array>
#include <set>
#include <string>
#include <vector>

#include "read_back.hpp"
#include "support/rasters.hpp"
#include "writers/vector_output.hpp"

namespace {

namespace rt = mgpr::runtime;

const std::array<rt::VectorField, 1> kFields{{{"index", rt::VectorField::Type::kInteger}}};
constexpr int kPerRow = 37;  // boxes a row: rows of boxes come one after the other, as a run's do
constexpr double kPitch = 3.2;

// Box i: a 3 m square in a grid of kPerRow columns, in rows down from the origin.
std::array<double, 4> box(int i) {
  const double x = 500000 + (i % kPerRow) * kPitch;
  const double y = 4500000 - (i / kPerRow) * kPitch;
  return {x, y - 3, x + 3, y};  // min x, min y, max x, max y
}

std::vector<rt::Record> boxes(int count) {
  std::vector<rt::Record> records;
  for (int i = 0; i < count; ++i) {
    const auto [x1, y1, x2, y2] = box(i);
    records.push_back(
        {rt::Geometry(std::array<rt::MapPoint, 4>{{{x1, y2}, {x2, y2}, {x2, y1}, {x1, y1}}}), {std::int64_t{i}}});
  }
  return records;
}

// One text value of one SQL query on `file`.
std::string sql_text(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string value = "(nothing)";
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      value = std::string("(error) ") + sqlite3_errmsg(db);
    } else if (sqlite3_step(statement) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(statement, 0);
      value = text != nullptr ? reinterpret_cast<const char*>(text) : "(null)";
    }
    sqlite3_finalize(statement);
  }
  sqlite3_close(db);
  return value;
}

// The names of the spatial index's triggers of layer "boxes", in order.
std::string trigger_names(const std::filesystem::path& file) {
  return sql_text(file,
                  "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'trigger' "
                  "AND substr(name, 1, 17) = 'rtree_boxes_geom_' ORDER BY name)");
}

// A GeoPackage with an empty layer "boxes" as GDAL makes it, its index made at once.
std::filesystem::path gdal_made(const std::filesystem::path& file) {
  auto* driver = GetGDALDriverManager()->GetDriverByName("GPKG");
  GDALDatasetUniquePtr dataset(driver->Create(file.c_str(), 0, 0, 0, GDT_Unknown, nullptr));
  OGRSpatialReference crs;
  crs.importFromEPSG(32618);
  auto* layer = dataset->CreateLayer("boxes", &crs, wkbPolygon, nullptr);
  if (layer != nullptr) (void)layer->SyncToDisk();
  return file;
}

// The `index` values of the features GDAL's spatial filter finds in the window.
std::set<std::int64_t> found_in(OGRLayer& layer, double min_x, double min_y, double max_x, double max_y) {
  std::set<std::int64_t> found;
  layer.SetSpatialFilterRect(min_x, min_y, max_x, max_y);
  layer.ResetReading();
  for (auto& feature : layer) found.insert(feature->GetFieldAsInteger64(0));
  layer.SetSpatialFilter(nullptr);
  return found;
}

std::set<std::int64_t> truly_in(int count, double min_x, double min_y, double max_x, double max_y) {
  std::set<std::int64_t> inside;
  for (int i = 0; i < count; ++i) {
    const auto [x1, y1, x2, y2] = box(i);
    if (x1 <= max_x && x2 >= min_x && y1 <= max_y && y2 >= min_y) inside.insert(i);
  }
  return inside;
}

class GpkgRtree : public testing::TestWithParam<int> {};

TEST_P(GpkgRtree, TheIndexIsSoundHoldsEveryFeatureAndFindsWhatAWindowHolds) {
  const int count = GetParam();
  mgpr::test::TempDir scratch;
  const auto file = scratch.path() / "boxes.gpkg";
  const auto records = boxes(count);
  rt::write_vector_layer(file, "boxes", mgpr::test::epsg_wkt(32618), kFields, records);

  EXPECT_EQ(sql_text(file, "SELECT rtreecheck('rtree_boxes_geom')"), "ok");
  EXPECT_EQ(sql_text(file, "SELECT count(*) FROM rtree_boxes_geom"), std::to_string(count));
  EXPECT_EQ(sql_text(file, "SELECT count(*) FROM rtree_boxes_geom r JOIN boxes b ON b.fid = r.id"),
            std::to_string(count));
  // Packed in the order the features came: the first leaf holds the first 51 (SQLite's
  // own insertion splits them, spatially, once the 52nd comes).
  if (count >= 52) {
    EXPECT_EQ(sql_text(file, "SELECT count(DISTINCT nodeno) FROM rtree_boxes_geom_rowid WHERE rowid <= 51"), "1");
  }
  // The triggers GDAL makes for such a layer, made again.
  EXPECT_EQ(trigger_names(file), trigger_names(gdal_made(scratch.path() / "reference.gpkg")));
  EXPECT_NE(trigger_names(file), "(null)");

  GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR | GDAL_OF_UPDATE));
  ASSERT_NE(dataset, nullptr);
  auto* layer = dataset->GetLayerByName("boxes");
  ASSERT_NE(layer, nullptr);
  EXPECT_TRUE(layer->TestCapability(OLCFastSpatialFilter)) << "GDAL sees no spatial index";
  const std::vector<std::array<double, 4>> windows{
      {500000, 4499990, 500010, 4500000},  // the first boxes
      {500050, 4499900, 500060, 4499980},  // inside the grid
      {499000, 4400000, 501000, 4600000},  // everything
      {600000, 4000000, 600001, 4000001},  // nothing
  };
  for (const auto& [x1, y1, x2, y2] : windows) {
    EXPECT_EQ(found_in(*layer, x1, y1, x2, y2), truly_in(count, x1, y1, x2, y2))
        << "window " << x1 << " " << y1 << " " << x2 << " " << y2;
  }
  // A feature added afterwards: the triggers index it.
  OGRFeature later(layer->GetLayerDefn());
  later.SetField(0, GIntBig{-1});
  OGRPolygon square;
  OGRLinearRing ring;
  for (const auto& [x, y] : std::array<std::array<double, 2>, 5>{
           {{700000, 4000000}, {700001, 4000000}, {700001, 3999999}, {700000, 3999999}, {700000, 4000000}}}) {
    ring.addPoint(x, y);
  }
  square.addRing(&ring);
  later.SetGeometry(&square);
  ASSERT_EQ(layer->CreateFeature(&later), OGRERR_NONE);
  EXPECT_EQ(found_in(*layer, 699999, 3999998, 700002, 4000001), std::set<std::int64_t>{-1});
  dataset.reset();
  EXPECT_EQ(sql_text(file, "SELECT rtreecheck('rtree_boxes_geom')"), "ok");
  EXPECT_EQ(sql_text(file, "SELECT count(*) FROM rtree_boxes_geom"), std::to_string(count + 1));
}

// 51 cells a node: a leaf, a leaf and one, a level of 51 leaves and one, and more.
INSTANTIATE_TEST_SUITE_P(FeatureCounts, GpkgRtree, testing::Values(0, 1, 50, 51, 52, 2601, 2602, 7000));

}  // namespace
