// output_format=parquet as users set it on mgpr's command line (a build with Arrow): the
// boxes of a detect run, read back from the GeoParquet folder with pyarrow, are the
// plain CSV's of the same run, each covering box its map corners; with outputs=run, a
// folder for the results and one for the rasters' footprints, each one table.
#include <nlohmann/json.hpp>

#include "mgpr_cli_fixture.hpp"
#include "support/known_squares.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers
using Json = nlohmann::json;

Json read_back(const fs::path& folder) {
  const auto read = mgpr::run_command({"env", std::string("PYTHONPATH=") + MGPR_ARROW_PYTHONPATH, MGPR_TEST_PYTHON,
                                       MGPR_READ_GEOPARQUET, folder.string(), "--rows"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  return read.exit_code == 0 ? Json::parse(read.out) : Json::object();
}

TEST_F(MgprCli, DetectWritesItsBoxesAsAGeoParquetFolderTheCsvAgreesWith) {
  const auto image = write_image("parquet.tif", 2048, 1024);
  const auto model = test_model("fixed-boxes", "fixed-boxes.pt");
  ASSERT_FALSE(HasFailure());
  const auto out = path("parquet-detect");
  const auto result = mgpr({image.string(), "model=" + model.string(), "task=detect", "tile_size=1024", "overlap=0",
                            "accelerator=cpu", "output_format=parquet", "output_dir=" + out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(contains(result.out, "# wrote " + (out / "parquet_detections.parquet").string())) << result.out;
  const auto facts = read_back(out / "parquet_detections.parquet");
  const auto csv = mgpr::test::read_csv_rows(out / "parquet_detections.csv");
  ASSERT_FALSE(csv.empty());
  ASSERT_EQ(facts["dataset_rows"], csv.size());
  EXPECT_EQ(facts["manifest"]["rows"], csv.size());
  // The run's provenance: the settings its results depend on, the model's identity too.
  EXPECT_TRUE(facts.at("manifest").at("run_settings").contains("model")) << facts["manifest"].dump();
  EXPECT_EQ(facts.at("manifest").at("run_settings").at("tile_size"), "1024");
  // The test image has a geotransform and no CRS: map coordinates, crs null.
  EXPECT_TRUE(
      facts.at("parts").at("detections-0000.parquet").at("geo").at("columns").at("geometry").at("crs").is_null());
  for (const auto& row : csv) {
    const auto same = [&row](const Json& got) {
      return got["x1"] == std::stod(row.at("x1")) && got["y1"] == std::stod(row.at("y1")) &&
             got["x2"] == std::stod(row.at("x2")) && got["y2"] == std::stod(row.at("y2"));
    };
    const auto& rows = facts["rows"];
    const auto found = std::find_if(rows.begin(), rows.end(), same);
    ASSERT_NE(found, rows.end()) << "the box at " << row.at("x1") << ", " << row.at("y1");
    EXPECT_EQ((*found)["label"], std::stoll(row.at("label")));
    EXPECT_NEAR((*found)["score"].get<double>(), std::stod(row.at("score")), 1e-6);
    const double map_x1 = std::stod(row.at("map_x1"));
    const double map_x2 = std::stod(row.at("map_x2"));
    const double map_y1 = std::stod(row.at("map_y1"));
    const double map_y2 = std::stod(row.at("map_y2"));
    EXPECT_NEAR((*found)["bbox"]["xmin"].get<double>(), std::min(map_x1, map_x2), 1e-6);
    EXPECT_NEAR((*found)["bbox"]["ymax"].get<double>(), std::max(map_y1, map_y2), 1e-6);
  }
}

TEST_F(MgprCli, ARunsGeoParquetIsAFolderForItsResultsAndOneForItsRasters) {
  const auto first = write_image("parquet-a.tif", 1024, 1024);
  const auto second = write_image("parquet-b.tif", 1024, 1024);
  const auto model = test_model("fixed-boxes", "fixed-boxes.pt");
  ASSERT_FALSE(HasFailure());
  const auto out = path("parquet-run");
  const auto result =
      mgpr({first.string(), second.string(), "model=" + model.string(), "task=detect", "tile_size=1024", "overlap=0",
            "accelerator=cpu", "outputs=run", "output_format=parquet", "output_dir=" + out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto results = read_back(out / "run_detections.parquet");
  EXPECT_EQ(results["dataset_rows"], mgpr::test::read_csv_rows(out / "run_detections.csv").size());
  // The run's files name each row's raster.
  std::set<std::string> rasters;
  for (const auto& row : results["rows"]) rasters.insert(row["raster"].get<std::string>());
  EXPECT_EQ(rasters.size(), 2U);
  EXPECT_EQ(read_back(out / "run_rasters.parquet")["dataset_rows"], 2);
}

}  // namespace
