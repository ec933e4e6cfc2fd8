// Known answers through the whole `mgpr` command: mgpr-test-image draws bright squares
// at known places (some straddling tile overlaps and image edges), mgpr-test-model saves
// a threshold detector and segmenter, and the outputs must find every square exactly
// once, at its map coordinates, whatever the ranks and sharding.
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <ogrsf_frmts.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "mgpr/process.hpp"
#include "support/known_squares.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::CommandResult;
using mgpr::run_command;

using mgpr::test::contains;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

using mgpr::test::kKnownSquares;
const auto& read_csv = mgpr::test::read_csv_rows;

double number(const std::map<std::string, std::string>& row, const std::string& column) {
  return std::stod(row.at(column));
}

constexpr double kPixelSize = 0.1;  // mgpr-test-image's default

class KnownAnswers : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    GDALAllRegister();
    dir_ = mgpr::test::program_temp_dir().path();
    for (const auto& [name, rotation] : {std::pair{"squares", "0"}, std::pair{"rotated", "30"}}) {
      std::vector<std::string> argv{MGPR_TEST_IMAGE, (dir_ / (std::string(name) + ".tif")).string(),
                                    "--width",       "200",
                                    "--height",      "150",
                                    "--block",       "64",
                                    "--rotation",    rotation,
                                    "--objects-csv", (dir_ / (std::string(name) + "_objects.csv")).string()};
      for (const auto& square : kKnownSquares) argv.insert(argv.end(), {"--square", square});
      const auto made = run_command(argv);
      ASSERT_EQ(made.exit_code, 0) << made.err;
    }
    for (const std::string kind : {"detector", "detector-dicts", "detector-tuple", "segmenter"}) {
      const auto made = run_command({MGPR_TEST_MODEL, kind, (dir_ / (kind + ".pt")).string(), "--threshold", "0.99"});
      ASSERT_EQ(made.exit_code, 0) << made.err;
    }
  }

  static fs::path path(const std::string& name) { return dir_ / name; }

  // One mgpr run over `image`; `ranks` CPU ranks started by mgpr itself.
  static CommandResult mgpr(const std::string& image, const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> argv{MGPR_BINARY,  path(image).string(), "tile_size=64",
                                  "overlap=16", "batch_size=3",       "accelerator=cpu",
                                  "threads=1",  "workers=1",          "output_dir=" + path(out).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv);
  }

  // Every known square matched by exactly one detection, in pixels and on the map.
  static void expect_every_square_once(const fs::path& detections, const fs::path& objects) {
    const auto found = read_csv(detections);
    const auto known = read_csv(objects);
    ASSERT_EQ(known.size(), kKnownSquares.size());
    EXPECT_EQ(found.size(), known.size()) << read_text(detections);
    for (const auto& object : known) {
      int matches = 0;
      for (const auto& box : found) {
        bool same = true;
        for (const std::string c : {"x1", "y1", "x2", "y2"})
          same = same && std::abs(number(box, c) - number(object, c)) <= 1;
        if (!same) continue;
        ++matches;
        for (const std::string c : {"map_x1", "map_y1", "map_x2", "map_y2"}) {
          EXPECT_NEAR(number(box, c), number(object, c), 1.5 * kPixelSize) << c << " of object " << object.at("id");
        }
        EXPECT_EQ(box.at("label"), "1");
      }
      EXPECT_EQ(matches, 1) << "object " << object.at("id") << " at " << object.at("x1") << "," << object.at("y1");
    }
  }

  static inline fs::path dir_;
};

TEST_F(KnownAnswers, DetectFindsEverySquareOnceInEveryOutputContract) {
  for (const std::string kind : {"detector", "detector-dicts", "detector-tuple"}) {
    const auto result = mgpr("squares.tif", "detect-" + kind, {"task=detect", "model=" + path(kind + ".pt").string()});
    ASSERT_EQ(result.exit_code, 0) << kind << '\n' << result.out << result.err;
    expect_every_square_once(path("detect-" + kind) / "squares_detections.csv", path("squares_objects.csv"));
  }
}

TEST_F(KnownAnswers, DetectUnderARotatedGeotransformGivesTheRotatedMapCoordinates) {
  const auto result =
      mgpr("rotated.tif", "detect-rotated", {"task=detect", "model=" + path("detector.pt").string(), "gpus=2"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  expect_every_square_once(path("detect-rotated") / "rotated_detections.csv", path("rotated_objects.csv"));
}

TEST_F(KnownAnswers, DetectGivesTheSameFileForOneTwoThreeRanksStaticAndDynamic) {
  std::string reference;
  for (const std::string sharding : {"static", "dynamic"}) {
    for (const int ranks : {1, 2, 3}) {
      const auto out = "detect-" + sharding + std::to_string(ranks);
      const auto result = mgpr("squares.tif", out,
                               {"task=detect", "model=" + path("detector.pt").string(), "sharding=" + sharding,
                                "gpus=" + std::to_string(ranks)});
      ASSERT_EQ(result.exit_code, 0) << out << '\n' << result.out << result.err;
      const auto csv = read_text(path(out) / "squares_detections.csv");
      if (reference.empty()) reference = csv;
      EXPECT_EQ(csv, reference) << sharding << " sharding on " << ranks << " ranks";
    }
  }
  expect_every_square_once(path("detect-static1") / "squares_detections.csv", path("squares_objects.csv"));
}

TEST_F(KnownAnswers, DetectionLayerOpensWithOgrinfoAndCarriesTheInputCrs) {
  const auto result =
      mgpr("squares.tif", "detect-gpkg", {"task=detect", "model=" + path("detector.pt").string(), "quicklook=true"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto layer_file = path("detect-gpkg") / "squares_detections.gpkg";
  const auto info = run_command({"ogrinfo", "-ro", "-so", layer_file.string(), "detections"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(contains(info.out, "Feature Count: 7")) << info.out;

  GDALDatasetUniquePtr input(GDALDataset::Open(path("squares.tif").c_str(), GDAL_OF_RASTER));
  GDALDatasetUniquePtr vector(GDALDataset::Open(layer_file.c_str(), GDAL_OF_VECTOR));
  ASSERT_TRUE(input && vector);
  auto* layer = vector->GetLayerByName("detections");
  ASSERT_NE(layer, nullptr);
  ASSERT_NE(layer->GetSpatialRef(), nullptr);
  EXPECT_TRUE(layer->GetSpatialRef()->IsSame(input->GetSpatialRef()));

  const auto png = path("detect-gpkg") / "squares_quicklook.png";
  GDALDatasetUniquePtr quicklook(GDALDataset::Open(png.c_str(), GDAL_OF_RASTER));
  ASSERT_TRUE(quicklook) << png;
  EXPECT_EQ(quicklook->GetRasterXSize(), 200);  // never enlarged
}

// The segmenter's answer computed from GDAL's own read: class 1 where the bands' mean
// of value/255 is above 0.99.
std::vector<std::uint8_t> thresholded(const fs::path& image) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER));
  const int width = dataset->GetRasterXSize();
  const int height = dataset->GetRasterYSize();
  const int bands = dataset->GetRasterCount();
  std::vector<float> values(static_cast<std::size_t>(width) * height * bands);
  EXPECT_EQ(dataset->RasterIO(GF_Read, 0, 0, width, height, values.data(), width, height, GDT_Float32, bands, nullptr,
                              0, 0, 0, nullptr),
            CE_None);
  std::vector<std::uint8_t> classes(static_cast<std::size_t>(width) * height);
  for (std::size_t i = 0; i < classes.size(); ++i) {
    float sum = 0;
    for (int b = 0; b < bands; ++b) sum += values[b * classes.size() + i] / 255.0F;
    classes[i] = sum / static_cast<float>(bands) > 0.99F ? 1 : 0;
  }
  return classes;
}

std::vector<std::uint8_t> read_classes(const fs::path& raster, int& width, int& height) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(raster.c_str(), GDAL_OF_RASTER));
  EXPECT_TRUE(dataset) << raster;
  if (!dataset) return {};
  width = dataset->GetRasterXSize();
  height = dataset->GetRasterYSize();
  std::vector<std::uint8_t> classes(static_cast<std::size_t>(width) * height);
  EXPECT_EQ(
      dataset->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, width, height, classes.data(), width, height, GDT_Byte, 0, 0),
      CE_None);
  return classes;
}

TEST_F(KnownAnswers, SegmentationMosaicEqualsTheThresholdedInputAcrossTileBorders) {
  const auto expected = thresholded(path("squares.tif"));
  ASSERT_GT(std::count(expected.begin(), expected.end(), 1), 500);
  for (const std::string sharding : {"static", "dynamic"}) {
    for (const int ranks : {1, 2, 3}) {
      if (sharding == "static" && ranks != 2) continue;
      const auto out = "segment-" + sharding + std::to_string(ranks);
      const auto result = mgpr("squares.tif", out,
                               {"task=segment", "model=" + path("segmenter.pt").string(), "sharding=" + sharding,
                                "gpus=" + std::to_string(ranks), "cog=true", "segment_probability=true"});
      ASSERT_EQ(result.exit_code, 0) << out << '\n' << result.out << result.err;
      int width = 0;
      int height = 0;
      const auto mosaic = read_classes(path(out) / "squares_segmentation.vrt", width, height);
      ASSERT_EQ(width, 200);
      ASSERT_EQ(height, 150);
      EXPECT_EQ(mosaic, expected) << out;
      EXPECT_EQ(read_classes(path(out) / "squares_segmentation.tif", width, height), expected) << out << " (COG)";
    }
  }
  const auto info = run_command({"gdalinfo", (path("segment-dynamic1") / "squares_segmentation.vrt").string()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(contains(info.out, "Size is 200, 150")) << info.out;
  EXPECT_TRUE(contains(info.out, "UTM zone 33N")) << info.out;
  GDALDatasetUniquePtr input(GDALDataset::Open(path("squares.tif").c_str(), GDAL_OF_RASTER));
  GDALDatasetUniquePtr mosaic(
      GDALDataset::Open((path("segment-dynamic1") / "squares_segmentation.vrt").c_str(), GDAL_OF_RASTER));
  double input_transform[6];
  double mosaic_transform[6];
  ASSERT_EQ(input->GetGeoTransform(input_transform), CE_None);
  ASSERT_EQ(mosaic->GetGeoTransform(mosaic_transform), CE_None);
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(mosaic_transform[i], input_transform[i]) << i;
  EXPECT_TRUE(mosaic->GetSpatialRef()->IsSame(input->GetSpatialRef()));
}

// Copies the squares with nodata 255 declared on every band and band 1 alone set to 255
// along row 5: the squares (255 in every band) are missing, the row (255 in one band) is data.
fs::path squares_with_nodata(const fs::path& squares, const fs::path& copy_path) {
  GDALDatasetUniquePtr squares_dataset(GDALDataset::Open(squares.c_str(), GDAL_OF_RASTER));
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  GDALDatasetUniquePtr copy(
      driver->CreateCopy(copy_path.c_str(), squares_dataset.get(), FALSE, nullptr, nullptr, nullptr));
  EXPECT_TRUE(copy) << copy_path;
  if (!copy) return copy_path;
  for (int band = 1; band <= copy->GetRasterCount(); ++band) copy->GetRasterBand(band)->SetNoDataValue(255);
  std::vector<std::uint8_t> red(static_cast<std::size_t>(copy->GetRasterXSize()), 255);
  EXPECT_EQ(copy->GetRasterBand(1)->RasterIO(GF_Write, 0, 5, copy->GetRasterXSize(), 1, red.data(),
                                             copy->GetRasterXSize(), 1, GDT_Byte, 0, 0),
            CE_None);
  return copy_path;
}

// 1 where every band of `image` holds 255.
std::vector<std::uint8_t> white_everywhere(const fs::path& image) {
  GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER));
  const auto plane = static_cast<std::size_t>(dataset->GetRasterXSize()) * dataset->GetRasterYSize();
  const int bands = dataset->GetRasterCount();
  std::vector<std::uint8_t> values(plane * bands);
  EXPECT_EQ(dataset->RasterIO(GF_Read, 0, 0, dataset->GetRasterXSize(), dataset->GetRasterYSize(), values.data(),
                              dataset->GetRasterXSize(), dataset->GetRasterYSize(), GDT_Byte, bands, nullptr, 0, 0, 0,
                              nullptr),
            CE_None);
  std::vector<std::uint8_t> white(plane, 1);
  for (std::size_t i = 0; i < plane; ++i) {
    for (int b = 0; b < bands; ++b) white[i] = white[i] != 0 && values[b * plane + i] == 255 ? 1 : 0;
  }
  return white;
}

// The segmentation is nodata (255) where the input pixel is missing under the
// source's rule (nodata in every band), its class elsewhere, one saturated band included;
// nodata=none classifies every pixel.
TEST_F(KnownAnswers, SegmentationIsNodataWhereTheInputPixelIsMissing) {
  const auto input = squares_with_nodata(path("squares.tif"), path("squares_nodata.tif"));
  const auto classes = thresholded(input);
  const auto white = white_everywhere(input);
  ASSERT_GT(std::count(white.begin(), white.end(), 1), 500);
  constexpr std::uint8_t kNoClass = 255;
  auto expected = classes;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (white[i] != 0) expected[i] = kNoClass;
  }
  for (const auto& [rule, want] : {std::pair{std::string{}, expected}, std::pair{std::string{"none"}, classes}}) {
    const auto out = "segment-nodata" + rule;
    std::vector<std::string> extra{"task=segment", "model=" + path("segmenter.pt").string()};
    if (!rule.empty()) extra.push_back("nodata=" + rule);
    const auto result = mgpr("squares_nodata.tif", out, extra);
    ASSERT_EQ(result.exit_code, 0) << out << '\n' << result.out << result.err;
    int width = 0;
    int height = 0;
    const auto mosaic = read_classes(path(out) / "squares_nodata_segmentation.vrt", width, height);
    ASSERT_EQ(width, 200);
    ASSERT_EQ(height, 150);
    EXPECT_EQ(mosaic, want) << "nodata=" << rule;
    for (int x = 0; x < width; ++x) {  // (255, g, b) is data whatever the rule
      const auto at = static_cast<std::size_t>(5) * width + x;
      if (white[at] == 0) {
        EXPECT_EQ(mosaic[at], 0) << "row 5, column " << x << ", nodata=" << rule;
      }
    }
  }
}

TEST_F(KnownAnswers, DetectOnFakeDataIsRefusedWithTheReason) {
  const auto result = run_command({MGPR_BINARY, "use_fake_data=true", "task=detect", "accelerator=cpu"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "task=detect needs a georeferenced raster")) << result.err;
}

}  // namespace
