// GeoParquet's agreements without Arrow (writers/geoparquet_layout.hpp): WKB byte for
// byte, the Hilbert order, the "geo" metadata and the manifest; and, in a build without
// Arrow, output_format=parquet refused by name.
#include "writers/geoparquet_layout.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "mgpr/error.hpp"
#include "support/temp_dir.hpp"
#include "writers/geoparquet_writer.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime::output {
namespace {

double f64_at(const std::string& bytes, std::size_t at) {
  double value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

std::uint32_t u32_at(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

TEST(GeoParquetLayout, APolygonIsIsoWkbLittleEndianWithItsRingClosed) {
  const Geometry square(std::array<MapPoint, 4>{{{0, 0}, {2, 0}, {2, 3}, {0, 3}}});
  const auto wkb = polygon_wkb(square);
  ASSERT_EQ(wkb.size(), 1U + 4 + 4 + 4 + 5 * 16);  // order, type, rings, points, 5 points
  EXPECT_EQ(wkb[0], 1);                            // little-endian
  EXPECT_EQ(u32_at(wkb, 1), 3U);                   // Polygon
  EXPECT_EQ(u32_at(wkb, 5), 1U);                   // one ring
  EXPECT_EQ(u32_at(wkb, 9), 5U);                   // closed: the first point again
  EXPECT_EQ(f64_at(wkb, 13 + 2 * 16), 2.0);        // the third point's x
  EXPECT_EQ(f64_at(wkb, 13 + 2 * 16 + 8), 3.0);
  EXPECT_EQ(f64_at(wkb, 13 + 4 * 16), 0.0);
  // A ring given closed is not closed twice.
  const Geometry closed(std::vector<std::vector<MapPoint>>{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}});
  EXPECT_EQ(u32_at(polygon_wkb(closed), 9), 4U);
  const auto box = bounds_of(square);
  EXPECT_EQ(box.xmin, 0);
  EXPECT_EQ(box.ymax, 3);
  EXPECT_TRUE(bounds_of(Geometry{}).empty());
}

TEST(GeoParquetLayout, BoxesAreOrderedAlongAHilbertCurve) {
  // A 2 x 2 grid of cells: the curve visits (0,0), (0,1), (1,1), (1,0).
  const std::vector<Bounds> cells{{1, 1, 2, 2}, {0, 0, 1, 1}, {1, 0, 2, 1}, {0, 1, 1, 2}};
  EXPECT_EQ(hilbert_order(cells), (std::vector<std::size_t>{1, 3, 0, 2}));
  // On a finer grid every step goes to a neighbour: the curve never jumps.
  std::vector<Bounds> grid;
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) grid.push_back({x * 1.0, y * 1.0, x + 1.0, y + 1.0});
  }
  const auto order = hilbert_order(grid);
  for (std::size_t i = 1; i < order.size(); ++i) {
    const auto& a = grid[order[i - 1]];
    const auto& b = grid[order[i]];
    EXPECT_EQ(std::abs(a.xmin - b.xmin) + std::abs(a.ymin - b.ymin), 1.0) << i;
  }
}

TEST(GeoParquetLayout, TheGeoMetadataAndTheManifestSayWhatTheSpecAsks) {
  const auto geo = nlohmann::json::parse(geo_metadata(R"({"type":"ProjectedCRS","name":"x"})", {0, 1, 2, 3}));
  EXPECT_EQ(geo["version"], "1.1.0");
  EXPECT_EQ(geo["primary_column"], "geometry");
  const auto& column = geo["columns"]["geometry"];
  EXPECT_EQ(column["encoding"], "WKB");
  EXPECT_EQ(column["geometry_types"], nlohmann::json::array({"Polygon"}));
  EXPECT_EQ(column["crs"]["name"], "x");
  EXPECT_EQ(column["bbox"], nlohmann::json::array({0, 1, 2, 3}));
  EXPECT_EQ(column["covering"]["bbox"]["xmin"], nlohmann::json::array({"bbox", "xmin"}));
  // Pixels: no CRS, and no bbox without rows.
  const auto pixels = nlohmann::json::parse(geo_metadata("", {}));
  EXPECT_TRUE(pixels["columns"]["geometry"]["crs"].is_null());
  EXPECT_FALSE(pixels["columns"]["geometry"].contains("bbox"));

  const std::vector<PartRecord> parts{{"a-0000.parquet", "a", 3, {0, 0, 1, 1}, "ab"},
                                      {"b-0000.parquet", "b", 0, {}, "cd"}};
  const std::vector<std::pair<std::string, std::string>> settings{{"model", "sha256:ab"}, {"tile_size", "400"}};
  const auto manifest = nlohmann::json::parse(manifest_json(parts, "mgpr 1", settings));
  EXPECT_EQ(manifest["run_settings"]["model"], "sha256:ab");
  EXPECT_EQ(manifest["run_settings"]["tile_size"], "400");
  EXPECT_EQ(manifest["rows"], 3);
  EXPECT_EQ(manifest["written_by"], "mgpr 1");
  EXPECT_EQ(manifest["bbox"], nlohmann::json::array({0, 0, 1, 1}));
  ASSERT_EQ(manifest["parts"].size(), 2U);
  EXPECT_EQ(manifest["parts"][1]["file"], "b-0000.parquet");
  EXPECT_TRUE(manifest["parts"][1]["bbox"].is_null());
  EXPECT_EQ(manifest["parts"][0]["sha256"], "ab");
}

TEST(GeoParquetLayout, ABuildWithoutArrowRefusesTheFormatByName) {
  if (geoparquet_available()) GTEST_SKIP() << "this build writes GeoParquet (geoparquet_test.cpp reads it back)";
  mgpr::test::TempDir scratch;
  const std::vector<VectorField> fields{{"score", VectorField::Type::kReal}};
  try {
    write_vector_layer(scratch.path() / "a.parquet", "a", "", fields, {});
    ADD_FAILURE() << "written without Arrow";
  } catch (const UsageError& refused) {
    EXPECT_NE(std::string(refused.what()).find("output_format=parquet"), std::string::npos) << refused.what();
    EXPECT_NE(std::string(refused.what()).find("output_format=gpkg"), std::string::npos) << refused.what();
  }
}

}  // namespace
}  // namespace mgpr::runtime::output
