// output_format= as users set it on mgpr's command line: detect and classify write their
// vector results in every format, and ogrinfo reads from each the same features, fields
// and values as from the GeoPackage of the same run; a format mgpr does not write is
// refused by name.
#include "mgpr_cli_fixture.hpp"
#include "support/ogrinfo.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

const std::vector<std::string> kFormats{"fgb", "geojson", "shp", "csv"};

// Runs mgpr with `arguments` and output_format=<format> into <out>-<format>.
void run_with(const std::vector<std::string>& arguments, const fs::path& out, const std::string& format) {
  auto all = arguments;
  all.push_back("output_format=" + format);
  all.push_back("output_dir=" + out.string() + "-" + format);
  all.insert(all.begin(), MGPR_BINARY);
  const auto result = mgpr::run_command(all);
  ASSERT_EQ(result.exit_code, 0) << format << ": " << result.out << result.err;
}

void expect_formats_agree(const std::vector<std::string>& arguments, const fs::path& out, const std::string& stem) {
  run_with(arguments, out, "gpkg");
  const auto reference = mgpr::test::ogrinfo_layer(out.string() + "-gpkg/" + stem + ".gpkg");
  EXPECT_GT(reference.count, 0);
  for (const auto& format : kFormats) {
    run_with(arguments, out, format);
    const auto layer = mgpr::test::ogrinfo_layer(out.string() + "-" + format + "/" + stem + "." + format);
    mgpr::test::expect_same_features(reference, layer, mgpr::test::quirks_of(format));
  }
}

TEST_F(MgprCli, DetectWritesTheSameBoxesInEveryOutputFormat) {
  const auto image = write_image("formats.tif", 2048, 1024);
  const auto model = test_model("fixed-boxes", "fixed-boxes.pt");
  ASSERT_FALSE(HasFailure());
  expect_formats_agree(
      {image.string(), "model=" + model.string(), "task=detect", "tile_size=1024", "overlap=0", "accelerator=cpu"},
      path("formats-detect"), "formats_detections");
  // The plain CSV beside every format but CSV, whose file takes its place.
  EXPECT_TRUE(fs::exists(path("formats-detect-fgb/formats_detections.csv")));
  const auto csv = read_text(path("formats-detect-csv/formats_detections.csv"));
  EXPECT_EQ(csv.rfind("WKT,raster,label,score,x1,y1,x2,y2,map_x1,", 0), 0U) << csv.substr(0, 200);
}

TEST_F(MgprCli, ClassifyWritesTheSameTilesInEveryOutputFormat) {
  const auto image = write_image("formats.tif", 100, 70);
  expect_formats_agree({image.string(), "model=" + path("mean.pt").string(), "tile_size=32", "accelerator=cpu"},
                       path("formats-classify"), "formats_tiles");
}

TEST_F(MgprCli, AnOutputFormatMgprDoesNotWriteIsRefusedByName) {
  const auto image = write_image("formats-bad.tif", 40, 40);
  const auto result = mgpr({image.string(), "model=" + path("mean.pt").string(), "output_format=kml",
                            "output_dir=" + path("formats-bad").string()});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.err, "output_format")) << result.err;
  EXPECT_TRUE(contains(result.err, "kml")) << result.err;
  EXPECT_TRUE(contains(result.err, "gpkg, fgb, geojson, shp, csv, parquet")) << result.err;
}

}  // namespace
