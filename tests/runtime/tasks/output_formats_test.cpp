// output_format= through the tasks (result_files.hpp): detect and classify write, per
// raster and for the run, the files each format names, and ogrinfo reads in every one
// the same features, fields and values as in the GeoPackage; the CSV with WKT takes the
// plain CSV's place with its columns. Real GeoTIFFs through the real source; results as
// ranks would have gathered them.
#include "run_outputs_support.hpp"
#include "support/ogrinfo.hpp"
#include "writers/vector_output.hpp"

using namespace mgpr::test::outputs;  // NOLINT: the suite's helpers
using mgpr::OutputFormat;

namespace {

struct Written {
  std::vector<std::string> names;  // in out/
  std::vector<fs::path> files;     // as write_outputs returned them
};

// Two rasters (the second in EPSG:4326, so the run has two CRS groups), all tiles done.
Written write(const TempDir& scratch, Task task, OutputLayout layout, OutputFormat format) {
  fs::remove_all(scratch.path() / "out");
  const std::vector<std::string> paths{raster(scratch, "a.tif"), raster(scratch, "b.tif", 4326)};
  auto run = plan_run(scratch, task, layout, paths);
  run.plan.options.format = format;
  const auto written = mgpr::runtime::make_task_output(run.plan)->write_outputs(results(run.plan, {}), {});
  return {names_in(scratch.path() / "out"), written};
}

mgpr::test::FormatQuirks quirks(OutputFormat format) {
  return mgpr::test::quirks_of(std::string(mgpr::name_of(format)));
}

class Formats : public testing::TestWithParam<std::tuple<Task, OutputFormat>> {};

TEST_P(Formats, PerRasterFilesHoldTheGeoPackagesFeatures) {
  const auto [task, format] = GetParam();
  const std::string what = task == Task::kDetect ? "detections" : "tiles";
  const std::string extension(mgpr::runtime::vector_format(format).extension);
  TempDir scratch;
  const auto reference_dir = scratch.path() / "reference";
  write(scratch, task, OutputLayout::kPerRaster, OutputFormat::kGeoPackage);
  fs::rename(scratch.path() / "out", reference_dir);
  const auto written = write(scratch, task, OutputLayout::kPerRaster, format);

  for (const std::string stem : {"a", "b"}) {
    const auto file = scratch.path() / "out" / (stem + "_" + what + extension);
    ASSERT_TRUE(fs::exists(file)) << file;
    const auto reference = mgpr::test::ogrinfo_layer(reference_dir / (stem + "_" + what + ".gpkg"));
    EXPECT_GT(reference.count, 0);
    mgpr::test::expect_same_features(reference, mgpr::test::ogrinfo_layer(file), quirks(format));
  }
  if (format == OutputFormat::kCsv) {
    // One CSV per raster: the plain CSV's columns, after the geometry.
    const auto header = lines_of(scratch.path() / "out" / ("a_" + what + ".csv")).front();
    const auto plain = lines_of(reference_dir / ("a_" + what + ".csv")).front();
    EXPECT_EQ(header.substr(0, 4), "WKT,");
    for (std::size_t at = 0, next = 0; at < plain.size(); at = next + 1) {
      next = std::min(plain.find(',', at), plain.size());
      EXPECT_NE(header.find(plain.substr(at, next - at)), std::string::npos) << plain.substr(at, next - at);
    }
    EXPECT_EQ(written.files.size(), 2U);
  } else {
    // The plain CSV, byte for byte the GeoPackage run's, and the vector file.
    for (const std::string stem : {"a", "b"}) {
      EXPECT_EQ(lines_of(scratch.path() / "out" / (stem + "_" + what + ".csv")),
                lines_of(reference_dir / (stem + "_" + what + ".csv")));
    }
    EXPECT_EQ(written.files.size(), 4U);
  }
  for (const auto& name : written.names) EXPECT_NE(name.front(), '.') << "left behind: " << name;
}

TEST_P(Formats, RunFilesHoldTheGeoPackagesLayers) {
  const auto [task, format] = GetParam();
  const std::string what = task == Task::kDetect ? "detections" : "tiles";
  const std::string extension(mgpr::runtime::vector_format(format).extension);
  TempDir scratch;
  const auto reference_dir = scratch.path() / "reference";
  write(scratch, task, OutputLayout::kRun, OutputFormat::kGeoPackage);
  fs::rename(scratch.path() / "out", reference_dir);
  const auto written = write(scratch, task, OutputLayout::kRun, format);

  const auto layers = mgpr::test::ogrinfo_layers(reference_dir / ("run_" + what + ".gpkg"));
  ASSERT_EQ(layers.size(), 4U);  // result and rasters layers of EPSG:32633, then of 4326
  EXPECT_EQ(layers[2].name, what + "_4326");
  // One file per layer, named after it.
  for (const auto& reference : layers) {
    const auto file = scratch.path() / "out" / ("run_" + reference.name + extension);
    ASSERT_TRUE(fs::exists(file)) << file;
    mgpr::test::expect_same_features(reference, mgpr::test::ogrinfo_layer(file), quirks(format));
  }
  const bool plain_csv = format != OutputFormat::kCsv;
  EXPECT_EQ(written.files.size(), layers.size() + (plain_csv ? 1 : 0));
  for (const auto& name : written.names) EXPECT_NE(name.front(), '.') << "left behind: " << name;
  if (plain_csv) {
    EXPECT_EQ(lines_of(scratch.path() / "out" / ("run_" + what + ".csv")),
              lines_of(reference_dir / ("run_" + what + ".csv")));
  }
}

INSTANTIATE_TEST_SUITE_P(OutputFormats, Formats,
                         testing::Combine(testing::Values(Task::kDetect, Task::kClassify),
                                          testing::Values(OutputFormat::kFlatGeobuf, OutputFormat::kGeoJson,
                                                          OutputFormat::kShapefile, OutputFormat::kCsv)),
                         [](const auto& combination) {
                           return std::string(mgpr::name_of(std::get<0>(combination.param))) + "_" +
                                  std::string(mgpr::name_of(std::get<1>(combination.param)));
                         });

// Without output_format= the files are those of every earlier version.
TEST(OutputFormats, TheDefaultIsTheGeoPackage) {
  EXPECT_EQ(mgpr::runtime::TaskOptions().format, OutputFormat::kGeoPackage);
  TempDir scratch;
  const auto written = write(scratch, Task::kDetect, OutputLayout::kPerRaster, OutputFormat::kGeoPackage);
  EXPECT_THAT(written.names,
              ElementsAre("a_detections.csv", "a_detections.gpkg", "b_detections.csv", "b_detections.gpkg"));
}

}  // namespace
