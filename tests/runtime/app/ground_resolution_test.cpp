// Rasters read at the model's ground resolution through the whole `mgpr`
// command: a detector whose model card says gsd 0.2, on a 0.1 m raster, finds its squares where it finds
// them on the raster warped to 0.2 m by GDAL beforehand; the segmenter's class raster
// is at 0.2 m over the raster's footprint; within the tolerance and with resample=false
// the raster is read as it is; a raster in degrees is refused with the fix.
#include <gdal_utils.h>

#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers
using mgpr::test::read_csv_rows;

// 240 x 200 px at 0.1 m in UTM zone 18N, squares of 40 px at even places: whole 20 px
// squares at 0.2 m, larger than the overlap of the runs below, so each lies whole in
// some tile.
const std::vector<std::string> kSquares{"20,20,40", "120,60,40", "60,140,40", "180,140,40"};

fs::path write_squares(const fs::path& file) {
  std::vector<std::string> argv{MGPR_TEST_IMAGE, file.string(), "--width", "240", "--height", "200", "--epsg", "32618"};
  for (const auto& square : kSquares) argv.insert(argv.end(), {"--square", square});
  const auto made = run_command(argv);
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return file;
}

// `source` warped by GDAL to `pixel` metres with `-r average`, as gdalwarp does it.
fs::path warp(const fs::path& source, const fs::path& file, double pixel) {
  GDALDatasetUniquePtr input(GDALDataset::Open(source.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  EXPECT_TRUE(input);
  const auto size = std::to_string(pixel);
  std::vector<std::string> words{"-tr", size, size, "-r", "average", "-of", "GTiff"};
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  GDALWarpAppOptions* options = GDALWarpAppOptionsNew(argv.data(), nullptr);
  GDALDatasetH handle = GDALDataset::ToHandle(input.get());
  int usage_error = 0;
  GDALDatasetUniquePtr warped(
      GDALDataset::FromHandle(GDALWarp(file.c_str(), nullptr, 1, &handle, options, &usage_error)));
  GDALWarpAppOptionsFree(options);
  EXPECT_TRUE(warped) << "GDALWarp failed";
  return file;
}

// A detection run; tiles of 64 with an overlap of 24 hold each 20 px square of the
// model grid whole in some tile, 128 and 48 each 40 px square of the raster's.
std::vector<std::string> detect(const fs::path& image, const fs::path& model, const fs::path& out, int tile = 64,
                                int overlap = 24) {
  return {image.string(),
          "model=" + model.string(),
          "task=detect",
          "tile_size=" + std::to_string(tile),
          "overlap=" + std::to_string(overlap),
          "batch_size=2",
          "accelerator=cpu",
          "threads=1",
          "workers=1",
          "output_dir=" + out.string()};
}

std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

double number(const std::map<std::string, std::string>& row, const std::string& column) {
  return std::stod(row.at(column));
}

// Every box of `found` has one of `expected` within `tolerance` map units per corner.
void expect_same_boxes(const fs::path& found, const fs::path& expected, double tolerance) {
  const auto boxes = read_csv_rows(found);
  const auto reference = read_csv_rows(expected);
  ASSERT_EQ(boxes.size(), kSquares.size()) << text_of(found);
  ASSERT_EQ(reference.size(), kSquares.size()) << text_of(expected);
  for (const auto& box : boxes) {
    int matches = 0;
    for (const auto& other : reference) {
      bool same = true;
      for (const std::string c : {"map_x1", "map_y1", "map_x2", "map_y2"}) {
        same = same && std::abs(number(box, c) - number(other, c)) <= tolerance;
      }
      matches += same ? 1 : 0;
    }
    EXPECT_EQ(matches, 1) << "box at " << box.at("map_x1") << "," << box.at("map_y1") << "\n"
                          << text_of(found) << text_of(expected);
  }
}

TEST_F(MgprCli, GroundResolutionDetectorAtItsGsdFindsWhatItFindsOnTheWarpedRaster) {
  const auto raster = write_squares(path("gsd-squares.tif"));
  const auto warped = warp(raster, path("gsd-squares-0.2m.tif"), 0.2);
  // The model's card says it was trained at 0.2 m: no key tells mgpr so.
  const auto model =
      test_model("detector", "gsd-detector.pt", {"--threshold", "0.99", "--card", R"({"mgpr_card": 1, "gsd": 0.2})"});
  ASSERT_FALSE(HasFailure());

  const auto resampled = mgpr(detect(raster, model, path("gsd-detect")));
  EXPECT_TRUE(contains(resampled.out, "read at the model's 0.2 m (average)")) << resampled.out;
  ASSERT_EQ(resampled.exit_code, 0) << resampled.out << resampled.err;
  const auto reference = mgpr(detect(warped, model, path("gsd-detect-warped")));
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;
  expect_same_boxes(path("gsd-detect") / "gsd-squares_detections.csv",
                    path("gsd-detect-warped") / "gsd-squares-0.2m_detections.csv", 0.2);

  // And where the squares are: the raster's corner (500000, 4500000) plus 0.1 m a pixel.
  for (const auto& box : read_csv_rows(path("gsd-detect") / "gsd-squares_detections.csv")) {
    const double x1 = (number(box, "map_x1") - 500000.0) / 0.1;
    const double y1 = (4500000.0 - std::max(number(box, "map_y1"), number(box, "map_y2"))) / 0.1;
    bool known = false;
    for (const auto& square : kSquares) {
      const auto comma = square.find(',');
      known = known || (std::abs(x1 - std::stod(square.substr(0, comma))) <= 2 &&
                        std::abs(y1 - std::stod(square.substr(comma + 1))) <= 2);
    }
    EXPECT_TRUE(known) << "box at raster pixel " << x1 << "," << y1;
  }
}

TEST_F(MgprCli, GroundResolutionClassRasterIsAtTheModelsGsdOverTheRastersFootprint) {
  const auto raster = write_squares(path("gsd-segment.tif"));
  const auto model = test_model("segmenter", "gsd-segmenter.pt", {"--threshold", "0.99"});
  ASSERT_FALSE(HasFailure());
  const auto out = path("gsd-segment-out");
  auto arguments = detect(raster, model, out);
  arguments[2] = "task=segment";
  arguments.emplace_back("gsd=0.2");
  const auto result = mgpr(arguments);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;

  GDALDatasetUniquePtr input(GDALDataset::Open(raster.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  const auto classes_file = out / "gsd-segment_segmentation.vrt";
  GDALDatasetUniquePtr classes(GDALDataset::Open(classes_file.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  ASSERT_TRUE(input && classes) << classes_file;
  std::array<double, 6> own{};
  std::array<double, 6> model_grid{};
  ASSERT_EQ(input->GetGeoTransform(own.data()), CE_None);
  ASSERT_EQ(classes->GetGeoTransform(model_grid.data()), CE_None);
  EXPECT_NEAR(model_grid[1], 0.2, 1e-9);
  EXPECT_NEAR(model_grid[5], -0.2, 1e-9);
  ASSERT_NE(classes->GetSpatialRef(), nullptr);
  EXPECT_TRUE(classes->GetSpatialRef()->IsSame(input->GetSpatialRef()));
  // The same footprint, within one model pixel.
  EXPECT_NEAR(model_grid[0], own[0], 0.2);
  EXPECT_NEAR(model_grid[3], own[3], 0.2);
  EXPECT_NEAR(model_grid[0] + classes->GetRasterXSize() * model_grid[1], own[0] + input->GetRasterXSize() * own[1],
              0.2);
  EXPECT_NEAR(model_grid[3] + classes->GetRasterYSize() * model_grid[5], own[3] + input->GetRasterYSize() * own[5],
              0.2);
  ASSERT_EQ(classes->GetRasterXSize(), 120);
  ASSERT_EQ(classes->GetRasterYSize(), 100);

  // Class 1 exactly on the squares: 20 x 20 model pixels each, aligned with the grid.
  std::vector<std::uint8_t> values(120 * 100);
  ASSERT_EQ(classes->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, 120, 100, values.data(), 120, 100, GDT_Byte, 0, 0),
            CE_None);
  std::vector<std::uint8_t> expected(values.size(), 0);
  for (const auto& square : kSquares) {
    const auto comma = square.find(',');
    const int x = std::stoi(square.substr(0, comma)) / 2;
    const int y = std::stoi(square.substr(comma + 1)) / 2;
    for (int row = y; row < y + 20; ++row) {
      for (int column = x; column < x + 20; ++column) expected[static_cast<std::size_t>(row) * 120 + column] = 1;
    }
  }
  EXPECT_EQ(values, expected);
}

TEST_F(MgprCli, GroundResolutionWithinToleranceOrResampleFalseReadsAsItIs) {
  const auto raster = write_squares(path("gsd-as-is.tif"));
  const auto model = test_model("detector", "gsd-as-is.pt", {"--threshold", "0.99"});
  ASSERT_FALSE(HasFailure());
  const auto plain = mgpr(detect(raster, model, path("gsd-as-is-plain"), 128, 48));
  ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  const auto reference = read_text(path("gsd-as-is-plain") / "gsd-as-is_detections.csv");
  ASSERT_EQ(read_csv_rows(path("gsd-as-is-plain") / "gsd-as-is_detections.csv").size(), kSquares.size());
  for (const auto& [name, keys] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"within", {"gsd=0.105"}}, {"resample-false", {"gsd=0.2", "resample=false"}}}) {
    auto arguments = detect(raster, model, path("gsd-as-is-" + name), 128, 48);
    arguments.insert(arguments.end(), keys.begin(), keys.end());
    const auto result = mgpr(arguments);
    ASSERT_EQ(result.exit_code, 0) << name << '\n' << result.out << result.err;
    EXPECT_EQ(read_text(path("gsd-as-is-" + name) / "gsd-as-is_detections.csv"), reference) << name;
  }
}

TEST_F(MgprCli, GroundResolutionRefusesARasterInDegreesWithTheFix) {
  const auto file = path("gsd-degrees.tif");
  const auto made = run_command({MGPR_TEST_IMAGE, file.string(), "--size", "32", "--epsg", "4326"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto model = test_model("detector", "gsd-degrees.pt");
  auto arguments = detect(file, model, path("gsd-degrees-out"));
  arguments.emplace_back("gsd=0.2");
  const auto result = mgpr(arguments);
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  const auto said = result.out + result.err;
  EXPECT_TRUE(contains(said, "gsd-degrees.tif")) << said;
  EXPECT_TRUE(contains(said, "CRS in degrees")) << said;
  EXPECT_TRUE(contains(said, "gdalwarp -t_srs EPSG:")) << said;
  EXPECT_TRUE(contains(said, "resample=false")) << said;

  arguments.emplace_back("resample=false");
  const auto as_is = mgpr(arguments);
  EXPECT_EQ(as_is.exit_code, 0) << as_is.out << as_is.err;
}

}  // namespace
