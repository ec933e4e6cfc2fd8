// task=segment with polygons=true through the whole `mgpr` command: a raster of known
// shapes (rectangles, an L, a ring whose hole lies on the corner of four tiles, two
// squares meeting at a corner of four tiles, shapes on the raster's edge and across one,
// two and four tile seams) and a threshold segmenter must give exactly one polygon per
// shape, with its hole, its area and class name, the very polygons GDAL's polygonize
// gives in one pass over the whole class raster, at 1 and 2 ranks.
#include <gdal_alg.h>
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <ogrsf_frmts.h>

#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "mgpr/process.hpp"
#include "support/known_squares.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::run_command;
using mgpr::test::contains;

constexpr int kWidth = 256;
constexpr int kHeight = 192;
constexpr double kPixel = 0.5;  // metres; a pixel is 0.25 m²

struct Rectangle {
  int x, y, width, height;
};
struct Shape {
  std::vector<Rectangle> filled;
  std::vector<Rectangle> holes;
  int pixels;
};

// With tile_size=64 and overlap=16 the tile cores split x at 56, 104, 152, 200 and y at
// 56, 104, 144.
const std::vector<Shape>& known_shapes() {
  static const std::vector<Shape> shapes{
      {{{10, 10, 8, 6}}, {}, 48},                          // inside one core
      {{{40, 20, 80, 10}}, {}, 800},                       // across two vertical seams
      {{{160, 40, 10, 60}, {160, 90, 50, 10}}, {}, 1000},  // an L across a row seam and a column seam
      {{{84, 84, 40, 40}}, {{94, 94, 20, 20}}, 1200},      // a ring round the corner of four cores
      {{{46, 134, 10, 10}}, {}, 100},                      // these two meet only at the point (56, 144),
      {{{56, 144, 10, 10}}, {}, 100},                      // a corner of four cores: two polygons
      {{{190, 130, 40, 40}}, {}, 1600},                    // across four tiles
      {{{236, 0, 20, 30}}, {}, 600},                       // on the raster's edge
  };
  return shapes;
}

const double kTransform[6] = {500000, kPixel, 0, 6000000, 0, -kPixel};

// The same point set, whatever the vertices' order and start (OGR's Equals compares
// vertex by vertex).
bool same_shape(const OGRGeometry& a, const OGRGeometry& b) { return a.Within(&b) && b.Within(&a); }

class Polygons : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    GDALAllRegister();
    dir_ = mgpr::test::program_temp_dir().path();
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(kWidth) * kHeight, 0);
    const auto paint = [&](const Rectangle& r, std::uint8_t value) {
      for (int y = r.y; y < r.y + r.height; ++y) {
        for (int x = r.x; x < r.x + r.width; ++x) pixels[static_cast<std::size_t>(y) * kWidth + x] = value;
      }
    };
    for (const auto& shape : known_shapes()) {
      for (const auto& r : shape.filled) paint(r, 255);
      for (const auto& r : shape.holes) paint(r, 0);
    }
    for (const auto& [name, epsg] : {std::pair{"shapes.tif", 32633}, std::pair{"degrees.tif", 4326}}) {
      auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
      GDALDatasetUniquePtr dataset(driver->Create((dir_ / name).c_str(), kWidth, kHeight, 3, GDT_Byte, nullptr));
      OGRSpatialReference crs;
      crs.importFromEPSG(epsg);
      dataset->SetSpatialRef(&crs);
      const double degrees[6] = {10, 0.0001, 0, 50, 0, -0.0001};
      dataset->SetGeoTransform(const_cast<double*>(epsg == 4326 ? degrees : kTransform));
      for (int band = 1; band <= 3; ++band) {
        ASSERT_EQ(dataset->GetRasterBand(band)->RasterIO(GF_Write, 0, 0, kWidth, kHeight, pixels.data(), kWidth,
                                                         kHeight, GDT_Byte, 0, 0),
                  CE_None);
      }
    }
    const auto made =
        run_command({MGPR_TEST_MODEL, "segmenter", (dir_ / "segmenter.pt").string(), "--threshold", "0.5"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  static fs::path path(const std::string& name) { return dir_ / name; }

  static mgpr::CommandResult mgpr(const std::string& out, std::vector<std::string> extra,
                                  const std::string& image = "shapes.tif") {
    std::vector<std::string> argv{MGPR_BINARY,
                                  path(image).string(),
                                  "task=segment",
                                  "model=" + path("segmenter.pt").string(),
                                  "tile_size=64",
                                  "overlap=16",
                                  "batch_size=3",
                                  "accelerator=cpu",
                                  "threads=1",
                                  "workers=1",
                                  "polygons=true",
                                  "class_names=[background,field]",
                                  "output_dir=" + path(out).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv);
  }

  // The polygons of a layer, with their fields.
  struct Found {
    std::unique_ptr<OGRGeometry> geometry;
    std::string class_name;
    double area = 0;
    std::int64_t pixels = 0;
    double score = 0;
  };
  static std::vector<Found> read_polygons(const fs::path& file) {
    std::vector<Found> out;
    GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR));
    EXPECT_TRUE(dataset) << file;
    if (!dataset) return out;
    auto* layer = dataset->GetLayerByName("polygons");
    EXPECT_NE(layer, nullptr) << file;
    if (layer == nullptr) return out;
    for (auto& feature : *layer) {
      out.push_back({std::unique_ptr<OGRGeometry>(feature->StealGeometry()), feature->GetFieldAsString("class_name"),
                     feature->GetFieldAsDouble("area"), feature->GetFieldAsInteger64("pixels"),
                     feature->GetFieldAsDouble("score")});
    }
    return out;
  }

  // GDAL's polygonize in one pass over the whole class mosaic: class 1's polygons, in map
  // coordinates.
  static std::vector<std::unique_ptr<OGRGeometry>> single_pass(const fs::path& mosaic) {
    GDALDatasetUniquePtr classes(GDALDataset::Open(mosaic.c_str(), GDAL_OF_RASTER));
    std::vector<std::uint8_t> values(static_cast<std::size_t>(kWidth) * kHeight);
    EXPECT_EQ(classes->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, kWidth, kHeight, values.data(), kWidth, kHeight,
                                                  GDT_Byte, 0, 0),
              CE_None);
    for (auto& value : values) value = value == 1 ? 1 : 0;
    auto* mem = GetGDALDriverManager()->GetDriverByName("MEM");
    GDALDatasetUniquePtr ones(mem->Create("", kWidth, kHeight, 1, GDT_Byte, nullptr));
    ones->SetGeoTransform(const_cast<double*>(kTransform));
    EXPECT_EQ(ones->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, kWidth, kHeight, values.data(), kWidth, kHeight,
                                               GDT_Byte, 0, 0),
              CE_None);
    GDALDatasetUniquePtr vectors(
        GetGDALDriverManager()->GetDriverByName("Memory")->Create("", 0, 0, 0, GDT_Unknown, nullptr));
    auto* layer = vectors->CreateLayer("p", nullptr, wkbPolygon, nullptr);
    OGRFieldDefn field("v", OFTInteger);
    layer->CreateField(&field);
    auto* band = ones->GetRasterBand(1);
    EXPECT_EQ(GDALPolygonize(band, band, layer, 0, nullptr, nullptr, nullptr), CE_None);
    std::vector<std::unique_ptr<OGRGeometry>> out;
    for (auto& feature : *layer) out.emplace_back(feature->StealGeometry());
    return out;
  }

  static inline fs::path dir_;
};

TEST_F(Polygons, EveryShapeIsOnePolygonWithItsHoleAsASinglePassGivesIt) {
  const auto run = mgpr("one-rank", {});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto found = read_polygons(path("one-rank") / "shapes_polygons.gpkg");
  ASSERT_EQ(found.size(), known_shapes().size());
  // The areas are the shapes' pixels, each polygon once, with its class name and score.
  std::multiset<std::int64_t> expected_pixels;
  for (const auto& shape : known_shapes()) expected_pixels.insert(shape.pixels);
  std::multiset<std::int64_t> found_pixels;
  for (const auto& polygon : found) {
    found_pixels.insert(polygon.pixels);
    EXPECT_DOUBLE_EQ(polygon.area, static_cast<double>(polygon.pixels) * kPixel * kPixel);
    ASSERT_EQ(wkbFlatten(polygon.geometry->getGeometryType()), wkbPolygon);
    EXPECT_NEAR(polygon.geometry->toPolygon()->get_Area(), polygon.area, 1e-6);
    EXPECT_EQ(polygon.class_name, "field");
    EXPECT_GT(polygon.score, 0.5);
    EXPECT_LE(polygon.score, 1.0);
    const int holes = polygon.geometry->toPolygon()->getNumInteriorRings();
    EXPECT_EQ(holes, polygon.pixels == 1200 ? 1 : 0) << "the ring keeps its hole, the others have none";
  }
  EXPECT_EQ(found_pixels, expected_pixels);
  // The very polygons of one pass over the whole mosaic.
  const auto whole = single_pass(path("one-rank") / "shapes_segmentation.vrt");
  ASSERT_EQ(whole.size(), found.size());
  for (const auto& polygon : found) {
    int equal = 0;
    for (const auto& truth : whole) equal += same_shape(*polygon.geometry, *truth) ? 1 : 0;
    EXPECT_EQ(equal, 1) << "a polygon of " << polygon.pixels << " px";
  }
}

TEST_F(Polygons, TwoRanksWriteWhatOneRankWrites) {
  const auto one = mgpr("ranks-1", {});
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  for (const std::string sharding : {"static", "dynamic"}) {
    const auto out = "ranks-2-" + sharding;
    const auto two = mgpr(out, {"gpus=2", "sharding=" + sharding});
    ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
    EXPECT_EQ(mgpr::test::read_text(path(out) / "shapes_polygons.csv"),
              mgpr::test::read_text(path("ranks-1") / "shapes_polygons.csv"))
        << sharding;
    const auto a = read_polygons(path("ranks-1") / "shapes_polygons.gpkg");
    const auto b = read_polygons(path(out) / "shapes_polygons.gpkg");
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(a[i].geometry->Equals(b[i].geometry.get()))
          << sharding << " polygon " << i << ": not vertex for vertex";
      EXPECT_EQ(a[i].score, b[i].score);
    }
  }
}

TEST_F(Polygons, MinAreaDropsSmallShapesAndSimplifyKeepsEveryShape) {
  const auto run = mgpr("filtered", {"min_area=30", "simplify=1"});  // 30 m²: 120 px
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto found = read_polygons(path("filtered") / "shapes_polygons.gpkg");
  EXPECT_EQ(found.size(), known_shapes().size() - 3);  // the 48 px rectangle and the two 100 px squares
  for (const auto& polygon : found) EXPECT_GE(polygon.area, 30);
}

TEST_F(Polygons, TheRunsFilesHoldEveryRastersPolygonsBesideTheirFootprints) {
  fs::copy_file(path("shapes.tif"), path("shapes_copy.tif"), fs::copy_options::overwrite_existing);
  const auto run = mgpr("run-files", {path("shapes_copy.tif").string(), "outputs=run"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto file = path("run-files") / "run_polygons.gpkg";
  EXPECT_EQ(read_polygons(file).size(), 2 * known_shapes().size());
  GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR));
  ASSERT_TRUE(dataset);
  auto* rasters = dataset->GetLayerByName("rasters");
  ASSERT_NE(rasters, nullptr);
  EXPECT_EQ(rasters->GetFeatureCount(), 2);
  const auto rows = mgpr::test::read_csv_rows(path("run-files") / "run_polygons.csv");
  ASSERT_EQ(rows.size(), 2 * known_shapes().size());
  std::multiset<std::string> named;
  for (const auto& row : rows) named.insert(fs::path(row.at("raster")).filename().string());
  EXPECT_EQ(named.count("shapes.tif"), known_shapes().size());
  EXPECT_EQ(named.count("shapes_copy.tif"), known_shapes().size());
  EXPECT_FALSE(fs::exists(path("run-files") / "shapes_polygons.gpkg")) << "no file per raster with outputs=run";
}

TEST_F(Polygons, BadSettingsAreRefusedBeforeAnyTileNamingTheFix) {
  const auto detect = mgpr("refused-detect", {"task=detect"});
  EXPECT_NE(detect.exit_code, 0);
  EXPECT_TRUE(contains(detect.err, "polygons=true")) << detect.err;
  EXPECT_TRUE(contains(detect.err, "task=segment")) << detect.err;

  const auto background = mgpr("refused-background", {"background_class=7"});
  EXPECT_NE(background.exit_code, 0);
  EXPECT_TRUE(contains(background.err, "background_class=7")) << background.err;
  EXPECT_TRUE(contains(background.err, "0 to 1")) << background.err;

  const auto degrees = mgpr("refused-degrees", {"min_area=10"}, "degrees.tif");
  EXPECT_NE(degrees.exit_code, 0);
  EXPECT_TRUE(contains(degrees.err, "degrees.tif")) << degrees.err;
  EXPECT_TRUE(contains(degrees.err, "projected CRS")) << degrees.err;
  EXPECT_FALSE(fs::exists(path("refused-degrees") / "degrees_segmentation")) << "no tile may be computed";

  // Without min_area or simplify a raster in degrees is fine.
  const auto plain = mgpr("degrees-plain", {}, "degrees.tif");
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(read_polygons(path("degrees-plain") / "degrees_polygons.gpkg").size(), known_shapes().size());
}

}  // namespace
