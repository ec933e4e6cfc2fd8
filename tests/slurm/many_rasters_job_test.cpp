// Thousands of rasters in one job as a user submits them: a folder of 5,000 small
// GeoTIFFs through mgpr-submit on the real local cluster, 2 ranks, the tile-mean
// classifier, outputs=run. One CSV and one GeoPackage for the run, every raster named in
// them and complete, one banner line for the rasters, and mgpr-logs reads the job. A list
// file (@list) through mgpr-submit too: its lines are relative to its own folder.
#include <cpl_conv.h>
#include <gdal.h>
#include <gtest/gtest.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::read_file;
using mgpr::test::scratch;

constexpr int kSide = 32;       // px: one tile of kSide² a raster
constexpr double kPixel = 0.5;  // m

// COUNT rasters of kSide² (3-band Byte, EPSG:32617, 100 a row side by side) in FOLDER,
// named r-00000.tif ...; their names.
std::vector<std::string> write_rasters(const fs::path& folder, int count) {
  fs::create_directories(folder);
  OGRSpatialReferenceH srs = OSRNewSpatialReference(nullptr);
  EXPECT_EQ(OSRImportFromEPSG(srs, 32617), OGRERR_NONE);
  char* wkt = nullptr;
  OSRExportToWkt(srs, &wkt);
  GDALDriverH gtiff = GDALGetDriverByName("GTiff");
  std::vector<unsigned char> pixels(static_cast<std::size_t>(kSide) * kSide * 3);
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "r-%05d.tif", i);
    names.emplace_back(name);
    GDALDatasetH dataset = GDALCreate(gtiff, (folder / name).c_str(), kSide, kSide, 3, GDT_Byte, nullptr);
    if (dataset == nullptr) {
      ADD_FAILURE() << "GDAL could not create " << (folder / name);
      break;
    }
    std::array<double, 6> transform{500000.0 + (i % 100) * kSide * kPixel,  kPixel, 0,
                                    4000000.0 - (i / 100) * kSide * kPixel, 0,      -kPixel};
    GDALSetGeoTransform(dataset, transform.data());
    GDALSetProjection(dataset, wkt);
    std::fill(pixels.begin(), pixels.end(), static_cast<unsigned char>(i % 251));
    EXPECT_EQ(GDALDatasetRasterIO(dataset, GF_Write, 0, 0, kSide, kSide, pixels.data(), kSide, kSide, GDT_Byte, 3,
                                  nullptr, 3, kSide * 3, 1),
              CE_None);
    GDALClose(dataset);
  }
  CPLFree(wkt);
  OSRDestroySpatialReference(srs);
  return names;
}

// run_tiles.csv's raster column (the first): how many rows name each raster.
std::map<std::string, int> rows_per_raster(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_TRUE(line.starts_with("raster,")) << line;
  std::map<std::string, int> rows;
  while (std::getline(in, line)) ++rows[line.substr(0, line.find(','))];
  return rows;
}

// The layer `rasters` of run_tiles.gpkg: each raster's status.
std::map<std::string, std::string> raster_statuses(const fs::path& gpkg) {
  std::map<std::string, std::string> statuses;
  GDALDatasetH dataset = GDALOpenEx(gpkg.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY, nullptr, nullptr, nullptr);
  if (dataset == nullptr) {
    ADD_FAILURE() << "OGR could not open " << gpkg;
    return statuses;
  }
  OGRLayerH layer = GDALDatasetGetLayerByName(dataset, "rasters");
  EXPECT_NE(layer, nullptr) << "no layer rasters in " << gpkg;
  if (layer != nullptr) {
    OGRFeatureDefnH definition = OGR_L_GetLayerDefn(layer);
    const int raster_field = OGR_FD_GetFieldIndex(definition, "raster");
    const int status_field = OGR_FD_GetFieldIndex(definition, "status");
    EXPECT_GE(raster_field, 0);
    EXPECT_GE(status_field, 0);
    OGR_L_ResetReading(layer);
    while (OGRFeatureH feature = OGR_L_GetNextFeature(layer)) {
      if (raster_field >= 0 && status_field >= 0) {
        statuses[OGR_F_GetFieldAsString(feature, raster_field)] = OGR_F_GetFieldAsString(feature, status_field);
      }
      OGR_F_Destroy(feature);
    }
  }
  GDALClose(dataset);
  return statuses;
}

class ManyRastersJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(MGPR_TEST_MODEL).empty()) GTEST_SKIP() << "needs mgpr-test-model (a build with LibTorch)";
    GDALAllRegister();
  }

  // mgpr-submit --wait with 2 ranks over INPUT; the job's id.
  static std::string submit(const fs::path& dir, const std::string& input, const fs::path& model) {
    const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:2", "--wait", "--log-dir", (dir / "logs").string(),
                                     input, "model=" + model.string(), "tile_size=32", "batch_size=64", "outputs=run",
                                     "output_dir=" + (dir / "out").string()});
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    // Not job_id_of: above 1 raster mgpr-submit prints "mgpr-submit: N rasters (...)" on
    // stdout before the id; the id is the line that is one.
    std::istringstream lines(result.out);
    for (std::string line; std::getline(lines, line);) {
      if (mgpr::is_job_id(line)) return line;
    }
    ADD_FAILURE() << "no job id in mgpr-submit's output: " << result.out;
    return "";
  }
};

TEST_F(ManyRastersJob, FiveThousandRastersInOneJobGiveOneSetOfFiles) {
  constexpr int kRasters = 5000;
  const auto dir = scratch("many-rasters-job");
  const auto names = write_rasters(dir / "rasters", kRasters);
  ASSERT_EQ(names.size(), static_cast<std::size_t>(kRasters));
  const auto model = dir / "tile-mean.pt";
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "tile-mean", model.string()}).exit_code, 0);

  const auto job_id = submit(dir, (dir / "rasters").string(), model);
  ASSERT_FALSE(job_id.empty());

  // One row a raster (one tile each), every raster named once.
  const auto rows = rows_per_raster(dir / "out" / "run_tiles.csv");
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(kRasters));
  std::set<std::string> named;
  for (const auto& [raster, count] : rows) {
    EXPECT_EQ(count, 1) << raster;
    named.insert(fs::path(raster).filename().string());
  }
  EXPECT_EQ(named, std::set<std::string>(names.begin(), names.end()));

  const auto statuses = raster_statuses(dir / "out" / "run_tiles.gpkg");
  EXPECT_EQ(statuses.size(), static_cast<std::size_t>(kRasters));
  int complete = 0;
  for (const auto& [raster, status] : statuses) complete += status == "complete" ? 1 : 0;
  EXPECT_EQ(complete, kRasters);
  EXPECT_FALSE(fs::exists(dir / "out" / (fs::path(names[0]).stem().string() + "_tiles.csv"))) << "per-raster files";

  // The job's output: one summary line for the rasters, no line per raster.
  const auto out = read_file(dir / "logs" / (job_id + ".out"));
  EXPECT_TRUE(contains(out, "#   5000 rasters, ")) << out.substr(0, 2000);
  EXPECT_FALSE(contains(out, "#   raster ")) << out.substr(0, 2000);
  EXPECT_FALSE(contains(out, names[kRasters / 2])) << "a raster in the middle is named in the job's output";

  const auto table = run_command({MGPR_LOGS, "--log-dir", (dir / "logs").string(), job_id});
  EXPECT_EQ(table.exit_code, 0) << table.out << table.err;
  EXPECT_TRUE(contains(table.out, "total: 2 rank(s)")) << table.out;
}

TEST_F(ManyRastersJob, AListFileThroughMgprSubmitReadsItsLinesFromItsOwnFolder) {
  const auto dir = scratch("list-file-job");
  const auto names = write_rasters(dir / "lists" / "tiles", 10);
  // Relative lines, a comment and a blank line; the list given as a relative path from
  // another folder, and the job started elsewhere still.
  {
    std::ofstream list(dir / "lists" / "list.txt");
    list << "# every other tile\n\n";
    for (std::size_t i = 0; i < names.size(); i += 2) list << "tiles/" << names[i] << "\n";
  }
  const auto model = dir / "tile-mean.pt";
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "tile-mean", model.string()}).exit_code, 0);
  const auto here = fs::current_path();
  fs::current_path(dir);
  const auto job_id = submit(dir, "@lists/list.txt", model);
  fs::current_path(here);
  ASSERT_FALSE(job_id.empty());

  const auto rows = rows_per_raster(dir / "out" / "run_tiles.csv");
  std::set<std::string> named;
  for (const auto& [raster, count] : rows) named.insert(fs::path(raster).filename().string());
  EXPECT_EQ(named, (std::set<std::string>{names[0], names[2], names[4], names[6], names[8]}));
  const auto statuses = raster_statuses(dir / "out" / "run_tiles.gpkg");
  EXPECT_EQ(statuses.size(), 5U);
}

}  // namespace
