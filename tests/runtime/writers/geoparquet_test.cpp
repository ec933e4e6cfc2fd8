// output_format=parquet written through the vector writer's seam (VectorFileWriter) and
// read back as users read it: pyarrow reads the folder as one table and each part's
// metadata, OGR parses every geometry, hashlib checks the manifest's checksums
// (read_geoparquet.py). Built with Arrow only (scripts/fetch-arrow).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "mgpr/process.hpp"
#include "support/temp_dir.hpp"
#include "writers/geoparquet_writer.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime {
namespace {

using Json = nlohmann::json;

constexpr const char* kUtm33 =
    R"(PROJCS["WGS 84 / UTM zone 33N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],)"
    R"(PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],)"
    R"(PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",15],PARAMETER["scale_factor",0.9996],)"
    R"(PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1],AUTHORITY["EPSG","32633"]])";

const std::vector<VectorField> kFields{{"label", VectorField::Type::kInteger},
                                       {"score", VectorField::Type::kReal},
                                       {"raster", VectorField::Type::kString}};

// Boxes of 1 m on a `side` x `side` grid of 2 m cells, in a shuffled order.
std::vector<Record> shuffled_grid(int side) {
  std::vector<Record> records;
  for (int y = 0; y < side; ++y) {
    for (int x = 0; x < side; ++x) {
      const double x0 = 500000 + 2.0 * x;
      const double y0 = 4500000 + 2.0 * y;
      records.push_back({std::array<MapPoint, 4>{{{x0, y0}, {x0 + 1, y0}, {x0 + 1, y0 + 1}, {x0, y0 + 1}}},
                         {std::int64_t{x % 7}, 0.5, std::string("a.tif")}});
    }
  }
  std::shuffle(records.begin(), records.end(), std::mt19937(7));
  return records;
}

Json read_back(const std::filesystem::path& folder) {
  const auto read = run_command({"env", std::string("PYTHONPATH=") + MGPR_ARROW_PYTHONPATH, MGPR_TEST_PYTHON,
                                 MGPR_READ_GEOPARQUET, folder.string()});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  return Json::parse(read.out);
}

TEST(GeoParquet, ADatasetReadsBackAsOneTableWithItsGeoMetadataItsChecksumsAndRowsInSpatialOrder) {
  test::TempDir scratch;
  const auto folder = scratch.path() / "run_detections.parquet";
  const int side = 300;  // 90,000 boxes: two row groups
  const auto records = shuffled_grid(side);
  {
    // Appended in pieces, as the writer's thread appends a row of tiles at a time.
    const std::vector<RecordLayer> layers{{"detections", kUtm33, kFields, {}}};
    const std::vector<std::pair<std::string, std::string>> settings{{"model", "sha256:0123"}};
    VectorFileWriter writer(folder, layers, settings);
    for (std::size_t at = 0; at < records.size(); at += 1000) {
      writer.append(0, std::span(records).subspan(at, std::min<std::size_t>(1000, records.size() - at)));
    }
    writer.commit();
  }
  const auto facts = read_back(folder);
  EXPECT_EQ(facts["dataset_rows"], side * side);
  ASSERT_EQ(facts["parts"].size(), 1U) << facts.dump();
  const auto& part = facts["parts"]["detections-0000.parquet"];
  EXPECT_EQ(part["rows"], side * side);
  EXPECT_EQ(part["row_groups"], 2);
  EXPECT_EQ(part["compression"], "ZSTD");
  EXPECT_EQ(part["columns"], Json::array({"label", "score", "raster", "geometry", "bbox"}));
  EXPECT_EQ(part["first_values"][0]["raster"], "a.tif");
  EXPECT_TRUE(part["wkb_matches_bbox"]) << "OGR parses every WKB to the row's covering box";
  const auto& geo = part["geo"];
  EXPECT_EQ(geo["version"], "1.1.0");
  EXPECT_EQ(geo["columns"]["geometry"]["crs"]["id"]["code"], 32633) << geo.dump();
  EXPECT_EQ(geo["columns"]["geometry"]["bbox"],
            Json::array({500000.0, 4500000.0, 500000.0 + 2 * side - 1, 4500000.0 + 2 * side - 1}));
  // Shuffled in, packed along a Hilbert curve: consecutive rows are neighbours (the
  // curve steps 2 m within a row group; a shuffled order would step ~200 m).
  EXPECT_LT(part["mean_step"].get<double>(), 10.0);
  // The manifest, written last, lists the part with its rows, bbox and checksum.
  const auto& manifest = facts["manifest"];
  EXPECT_EQ(manifest["rows"], side * side);
  EXPECT_EQ(manifest["run_settings"]["model"], "sha256:0123") << "the run's provenance";
  ASSERT_EQ(manifest["parts"].size(), 1U);
  EXPECT_EQ(manifest["parts"][0]["file"], "detections-0000.parquet");
  EXPECT_EQ(manifest["parts"][0]["sha256"], part["sha256"]);
  EXPECT_EQ(manifest["parts"][0]["bbox"], geo["columns"]["geometry"]["bbox"]);
}

TEST(GeoParquet, ALayerWithoutRowsOrCrsIsAnEmptyPartAndAFolderHoldsOneLayer) {
  test::TempDir scratch;
  const auto folder = scratch.path() / "empty.parquet";
  write_vector_layer(folder, "detections", "", kFields, {});
  const auto facts = read_back(folder);
  EXPECT_EQ(facts["dataset_rows"], 0);
  const auto& part = facts["parts"]["detections-0000.parquet"];
  EXPECT_EQ(part["rows"], 0);
  EXPECT_TRUE(part["geo"]["columns"]["geometry"]["crs"].is_null()) << "pixels: no CRS";
  EXPECT_FALSE(part["geo"]["columns"]["geometry"].contains("bbox"));
  const std::vector<RecordLayer> two{{"a", "", kFields, {}}, {"b", "", kFields, {}}};
  EXPECT_THROW(write_vector_layers(scratch.path() / "two.parquet", two), std::invalid_argument);
}

TEST(GeoParquet, AnUncommittedDatasetLeavesNothingAndACommittedOneReplacesTheLast) {
  test::TempDir scratch;
  const auto folder = scratch.path() / "stopped.parquet";
  const auto records = shuffled_grid(10);
  {
    const std::vector<RecordLayer> layers{{"detections", kUtm33, kFields, {}}};
    VectorFileWriter writer(folder, layers);
    writer.append(0, records);
  }  // a stopped run: never committed
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path())) << "neither the folder nor its temporary";
  write_vector_layer(folder, "detections", kUtm33, kFields, records);
  write_vector_layer(folder, "detections", kUtm33, kFields, std::span(records).first(5));
  EXPECT_EQ(read_back(folder)["dataset_rows"], 5) << "the second run's folder, whole";
}

}  // namespace
}  // namespace mgpr::runtime
