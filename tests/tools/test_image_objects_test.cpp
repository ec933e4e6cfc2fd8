// mgpr-test-image's known objects: squares painted at 255 in every band over a
// background that stays at or below 246, and an objects CSV whose clipped pixel corners
// and map corners agree with what GDAL reads back, north-up and rotated.
#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "mgpr/process.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::run_command;

constexpr int kWidth = 70;
constexpr int kHeight = 50;

struct Box {
  int x1, y1, x2, y2;
};

// Squares inside, past the left, past the bottom-right corner and past the top edge.
const std::vector<std::string> kSquares = {"10,5,8", "-3,20,10", "64,44,12", "30,-2,5"};
const std::vector<Box> kClipped = {{10, 5, 18, 13}, {0, 20, 7, 30}, {64, 44, 70, 50}, {30, 0, 35, 3}};

bool inside_any(int column, int row) {
  for (const auto& b : kClipped) {
    if (column >= b.x1 && column < b.x2 && row >= b.y1 && row < b.y2) return true;
  }
  return false;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  return fields;
}

std::vector<std::string> partial_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().string().find(".partial") != std::string::npos) found.push_back(entry.path().string());
  }
  return found;
}

class TestImageObjects : public testing::TestWithParam<double> {};

TEST_P(TestImageObjects, SquaresCsvAndGeotransformAgreeWithGdal) {
  const double rotation = GetParam();
  mgpr::test::TempDir dir;
  const auto image = dir.path() / "squares.tif";
  const auto csv = dir.path() / "objects.csv";
  std::vector<std::string> argv = {MGPR_TEST_IMAGE, image.string(),           "--width",       std::to_string(kWidth),
                                   "--height",      std::to_string(kHeight),  "--block",       "16",
                                   "--rotation",    std::to_string(rotation), "--objects-csv", csv.string()};
  for (const auto& square : kSquares) argv.insert(argv.end(), {"--square", square});
  const auto made = run_command(argv);
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  EXPECT_TRUE(partial_files(dir.path()).empty());

  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  ASSERT_TRUE(dataset);
  ASSERT_EQ(dataset->GetRasterXSize(), kWidth);
  ASSERT_EQ(dataset->GetRasterYSize(), kHeight);
  ASSERT_EQ(dataset->GetRasterCount(), 3);

  std::array<double, 6> gt{};
  ASSERT_EQ(dataset->GetGeoTransform(gt.data()), CE_None);
  const double radians = rotation * std::numbers::pi / 180.0;
  const std::array<double, 6> expected_gt = {500000.0,  0.1 * std::cos(radians), 0.1 * std::sin(radians),
                                             4500000.0, 0.1 * std::sin(radians), -0.1 * std::cos(radians)};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(gt[i], expected_gt[i], 1e-12) << "gt" << i;

  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(kWidth) * kHeight);
  for (int band = 1; band <= 3; ++band) {
    ASSERT_EQ(dataset->GetRasterBand(band)->RasterIO(GF_Read, 0, 0, kWidth, kHeight, pixels.data(), kWidth, kHeight,
                                                     GDT_Byte, 0, 0),
              CE_None);
    int background_max = 0;
    for (int row = 0; row < kHeight; ++row) {
      for (int column = 0; column < kWidth; ++column) {
        const int value = pixels[static_cast<std::size_t>(row) * kWidth + column];
        if (inside_any(column, row)) {
          ASSERT_EQ(value, 255) << "band " << band << " row " << row << " column " << column;
        } else {
          background_max = std::max(background_max, value);
        }
      }
    }
    EXPECT_LE(background_max, 246) << "band " << band;
  }

  std::istringstream lines(mgpr::test::read_text(csv));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "id,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2");
  std::size_t row = 0;
  for (; std::getline(lines, line); ++row) {
    ASSERT_LT(row, kClipped.size()) << line;
    const auto fields = split(line);
    ASSERT_EQ(fields.size(), 9U) << line;
    const auto& b = kClipped[row];
    EXPECT_EQ(fields[0], std::to_string(row + 1));
    EXPECT_EQ(std::stoi(fields[1]), b.x1) << line;
    EXPECT_EQ(std::stoi(fields[2]), b.y1) << line;
    EXPECT_EQ(std::stoi(fields[3]), b.x2) << line;
    EXPECT_EQ(std::stoi(fields[4]), b.y2) << line;
    EXPECT_NEAR(std::stod(fields[5]), gt[0] + b.x1 * gt[1] + b.y1 * gt[2], 1e-6) << line;
    EXPECT_NEAR(std::stod(fields[6]), gt[3] + b.x1 * gt[4] + b.y1 * gt[5], 1e-6) << line;
    EXPECT_NEAR(std::stod(fields[7]), gt[0] + b.x2 * gt[1] + b.y2 * gt[2], 1e-6) << line;
    EXPECT_NEAR(std::stod(fields[8]), gt[3] + b.x2 * gt[4] + b.y2 * gt[5], 1e-6) << line;
  }
  EXPECT_EQ(row, kClipped.size());
}

INSTANTIATE_TEST_SUITE_P(Rotation, TestImageObjects, testing::Values(0.0, 30.0),
                         [](const testing::TestParamInfo<double>& rotation) {
                           return "Degrees" + std::to_string(static_cast<int>(rotation.param));
                         });

TEST(TestImage, WidthAndHeightOverrideSize) {
  mgpr::test::TempDir dir;
  const auto image = dir.path() / "wide.tif";
  const auto made = run_command({MGPR_TEST_IMAGE, image.string(), "--size", "40", "--width", "24", "--block", "16"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  ASSERT_TRUE(dataset);
  EXPECT_EQ(dataset->GetRasterXSize(), 24);
  EXPECT_EQ(dataset->GetRasterYSize(), 40);
}

// The margin the help promises for a threshold of 0.99: the pattern reaches 246 (bands 1
// and 2 do from 400 px on) and never more.
TEST(TestImage, BackgroundReachesButNeverExceeds246) {
  mgpr::test::TempDir dir;
  const auto image = dir.path() / "background.tif";
  const auto made = run_command({MGPR_TEST_IMAGE, image.string(), "--size", "400", "--block", "16"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  ASSERT_TRUE(dataset);
  std::vector<std::uint8_t> pixels(400 * 400 * 3);
  ASSERT_EQ(dataset->RasterIO(GF_Read, 0, 0, 400, 400, pixels.data(), 400, 400, GDT_Byte, 3, nullptr, 0, 0, 0, nullptr),
            CE_None);
  EXPECT_EQ(*std::max_element(pixels.begin(), pixels.end()), 246);
}

struct BadOption {
  std::vector<std::string> arguments;
  std::string message;  // part of stderr naming the fault
};

TEST(TestImage, BadOptionValuesExit2ByNameAndWriteNothing) {
  const std::vector<BadOption> cases = {
      {{"--square", "1,2"}, "give X,Y,SIZE"},
      {{"--square", "1,2,0"}, "SIZE must be at least 1"},
      {{"--square", "1,two,3"}, "'two' is not an integer"},
      {{"--square", "32,0,3"}, "entirely outside the 32x32 image"},
      {{"--square", "-3,0,3"}, "entirely outside"},
      {{"--rotation", "nan"}, "--rotation"},
      {{"--rotation", "400"}, "--rotation"},
      {{"--width", "0"}, "--width"},
  };
  for (const auto& bad : cases) {
    mgpr::test::TempDir dir;
    const auto image = dir.path() / "bad.tif";
    std::vector<std::string> argv = {
        MGPR_TEST_IMAGE, image.string(), "--size",        "32",
        "--block",       "16",           "--objects-csv", (dir.path() / "bad.csv").string()};
    argv.insert(argv.end(), bad.arguments.begin(), bad.arguments.end());
    const auto result = run_command(argv);
    const auto shown = bad.arguments[0] + " " + bad.arguments[1];
    EXPECT_EQ(result.exit_code, 2) << shown << '\n' << result.err;
    EXPECT_NE(result.err.find(bad.message), std::string::npos) << shown << '\n' << result.err;
    EXPECT_TRUE(fs::is_empty(dir.path())) << shown << ": something was written";
  }
}

}  // namespace

namespace {

int raster_side(const fs::path& file) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  return dataset ? dataset->GetRasterXSize() : -1;
}

}  // namespace

// Multigpu_raster writes its test image with `image_path=... image_size=...`,
// the keys (and config file) of the prediction run; mgpr-test-image takes them too.
TEST(TestImage, TakesMgprsKeysAndConfigFileAsMultigpuRasterUsersWriteThem) {
  mgpr::test::TempDir dir;
  const auto by_keys = dir.path() / "keys.tif";
  const auto made = run_command({MGPR_TEST_IMAGE, "image_path=" + by_keys.string(), "image_size=48"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(raster_side(by_keys), 48);

  const auto by_file = dir.path() / "file.tif";
  const auto config = dir.path() / "run.toml";
  std::ofstream(config) << "image_path = [\"" << by_file.string() << "\"]\nimage_size = 32\n";
  const auto from_file = run_command({MGPR_TEST_IMAGE, "--config", config.string()});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(raster_side(by_file), 32);

  const auto none = run_command({MGPR_TEST_IMAGE, "image_size=48"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("image_path="), std::string::npos) << none.err;
  const auto two = run_command({MGPR_TEST_IMAGE, (dir.path() / "a.tif").string(), (dir.path() / "b.tif").string()});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("give one GeoTIFF"), std::string::npos) << two.err;
  EXPECT_FALSE(fs::exists(dir.path() / "a.tif"));
  EXPECT_FALSE(fs::exists(dir.path() / "b.tif"));
}
