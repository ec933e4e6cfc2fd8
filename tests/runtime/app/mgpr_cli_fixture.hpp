#pragma once
// The `mgpr` end-to-end tests' fixture: a temporary folder, random GeoTIFFs written with
// GDAL, a tile-mean TorchScript model, and running `mgpr`. One class for every file of
// the suite (mgpr_cli_test.cpp, mgpr_cli_faults_test.cpp), so they share the suite name.
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "geometry/tiler.hpp"
#include "mgpr/process.hpp"
#include "support/known_squares.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"
#include "support/tile_mean_model.hpp"

namespace mgpr::test::cli {

namespace fs = std::filesystem;
using mgpr::CommandResult;
using mgpr::run_command;

using mgpr::test::contains;

// A program under test: the one this build made (`built`), or, with MGPR_TEST_PROGRAMS
// set, the program of that name in that folder: bench/gpu-check runs the suite on a
// machine the build folder's paths do not reach.
inline std::string program(const char* built) {
  const char* folder = std::getenv("MGPR_TEST_PROGRAMS");
  if (folder == nullptr || *folder == '\0') return built;
  return (fs::path(folder) / fs::path(built).filename()).string();
}

class MgprCli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    GDALAllRegister();
    dir_ = mgpr::test::program_temp_dir().path();
    mgpr::test::save_tile_mean_model(dir_);  // mean.pt
  }

  static fs::path path(const std::string& name) { return dir_ / name; }

  // A known-answer model saved by mgpr-test-model (`kind` and its `options`) as `name`.
  static fs::path test_model(const std::string& kind, const std::string& name,
                             const std::vector<std::string>& options = {}) {
    const auto file = path(name);
    std::vector<std::string> argv{program(MGPR_TEST_MODEL), kind, file.string()};
    argv.insert(argv.end(), options.begin(), options.end());
    const auto made = run_command(argv);
    EXPECT_EQ(made.exit_code, 0) << "mgpr-test-model " << kind << ": " << made.err;
    return file;
  }

  // A 3-band Byte GeoTIFF with seeded random pixels, georeferenced in EPSG:32633.
  static fs::path write_image(const std::string& name, int width, int height) {
    const auto file = path(name);
    auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
    GDALDatasetUniquePtr dataset(driver->Create(file.c_str(), width, height, 3, GDT_Byte, nullptr));
    const double transform[6] = {500000, 0.5, 0, 6000000, 0, -0.5};
    dataset->SetGeoTransform(const_cast<double*>(transform));
    std::mt19937 random(static_cast<unsigned>(width * 31 + height));
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height);
    for (int band = 1; band <= 3; ++band) {
      for (auto& value : pixels) value = static_cast<std::uint8_t>(random() % 256);
      EXPECT_EQ(dataset->GetRasterBand(band)->RasterIO(GF_Write, 0, 0, width, height, pixels.data(), width, height,
                                                       GDT_Byte, 0, 0),
                CE_None);
    }
    return file;
  }

  // The mean the model must report for a tile: bands 1-3 over the window scaled by 1/255,
  // zero padding up to tile_size when the image is smaller than a tile.
  static double expected_mean(const fs::path& image, int x, int y, int width, int height, int tile_size) {
    GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    std::vector<double> values(static_cast<std::size_t>(width) * height * 3);
    int bands[3] = {1, 2, 3};
    EXPECT_EQ(dataset->RasterIO(GF_Read, x, y, width, height, values.data(), width, height, GDT_Float64, 3, bands, 0, 0,
                                0, nullptr),
              CE_None);
    double sum = 0;
    for (const double value : values) sum += value / 255.0;
    return sum / (3.0 * tile_size * tile_size);
  }

  static CommandResult mgpr(std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), program(MGPR_BINARY));
    return run_command(arguments);
  }

  static std::string read_text(const fs::path& file) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  struct Row {
    int image, row, column, x, y, width, height, label;
    double score, logit;
  };
  // <stem>_tiles.csv rows, keyed by tile id; fails the test on a duplicate tile.
  static std::map<std::tuple<int, int, int>, Row> read_scores(const fs::path& file) {
    std::map<std::tuple<int, int, int>, Row> rows;
    std::istringstream lines(read_text(file));
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line, "raster,image,row,column,x,y,width,height,center_x,center_y,label,score,logit");
    while (std::getline(lines, line)) {
      std::replace(line.begin(), line.end(), ',', ' ');
      std::istringstream fields(line);
      std::string raster;
      Row r{};
      double center_x = 0;
      double center_y = 0;
      fields >> raster >> r.image >> r.row >> r.column >> r.x >> r.y >> r.width >> r.height >> center_x >> center_y >>
          r.label >> r.score >> r.logit;
      EXPECT_TRUE(rows.emplace(std::tuple{r.image, r.row, r.column}, r).second) << "tile listed twice: " << line;
    }
    return rows;
  }

  static inline fs::path dir_;
};

}  // namespace mgpr::test::cli
