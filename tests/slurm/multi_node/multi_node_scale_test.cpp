// The many-rasters job at its largest geometry on the local cluster: 16 ranks on 8 hosts
// (2 each, every host a network namespace of its own) run 1,100 rasters, their results
// streamed to rank 0 and written while the tiles run, and give the same files as one
// rank; every rank's summary and mgpr-logs' table name all 16 ranks and 8 hosts.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "slurm/multi_node/multi_node_support.hpp"
#include "support/rasters.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::read_file;
using namespace mgpr::test::multi_node;

constexpr int kRasters = 1100;
constexpr int kSide = 96;  // px: in tiles of 64 with overlap 16, 2 x 2 tiles a raster
constexpr int kTilesPerRaster = 4;

// kRasters rasters side by side (100 a row), each a VRT window onto one GeoTIFF of
// pseudo-random pixels (EPSG:32633, 1 m), as the scale benchmark makes them; their list.
fs::path write_rasters(const fs::path& dir) {
  mgpr::test::RasterSpec spec;
  spec.width = kSide;
  spec.height = kSide;
  const auto base = mgpr::test::write_raster((dir / "base.tif").string(), spec);
  fs::create_directories(dir / "rasters");
  std::ofstream listing(dir / "rasters.list");
  for (int index = 0; index < kRasters; ++index) {
    const auto path = dir / "rasters" / fmt::format("r{:05d}.vrt", index);
    std::ofstream vrt(path);
    vrt << fmt::format(R"(<VRTDataset rasterXSize="{0}" rasterYSize="{0}">
  <SRS>EPSG:32633</SRS>
  <GeoTransform>{1}, 1, 0, {2}, 0, -1</GeoTransform>
)",
                       kSide, 500000 + (index % 100) * kSide, 4000000 - (index / 100) * kSide);
    for (int band = 1; band <= 3; ++band) {
      vrt << fmt::format(R"(  <VRTRasterBand dataType="Byte" band="{0}">
    <SimpleSource>
      <SourceFilename relativeToVRT="0">{1}</SourceFilename>
      <SourceBand>{0}</SourceBand>
    </SimpleSource>
  </VRTRasterBand>
)",
                         band, base);
    }
    vrt << "</VRTDataset>\n";
    listing << path.string() << "\n";
  }
  return dir / "rasters.list";
}

// A GeoPackage layer as sorted CSV lines (GDAL's ogr2ogr), geometry included.
std::vector<std::string> layer_lines(const fs::path& gpkg, const std::string& layer) {
  const auto dumped =
      run_command({"ogr2ogr", "-f", "CSV", "/vsistdout/", gpkg.string(), layer, "-lco", "GEOMETRY=AS_WKT"});
  EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  return sorted_lines(dumped.out);
}

TEST(MultiNode, SixteenRanksOnEightHostsWriteWhatOneRankWrites) {
  if (std::string(MGPR_TEST_MODEL).empty()) GTEST_SKIP() << "needs mgpr-test-model";
  const auto dir = scratch("sixteen-ranks");
  const auto listing = write_rasters(dir);
  const auto model = dir / "grid.pt";
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "grid-boxes", model.string(), "--grid", "4"}).exit_code, 0);
  ASSERT_FALSE(HasFailure());
  const auto logs = dir / "logs";
  const auto run = [&](const std::vector<std::string>& geometry, const std::string& name) {
    std::vector<std::string> argv{MGPR_SUBMIT, "--wait", "--log-dir", logs.string()};
    argv.insert(argv.end(), geometry.begin(), geometry.end());
    // Boxes of 16 px on a 16 px grid: the copies in the tiles' overlap are merged.
    argv.insert(argv.end(),
                {"@" + listing.string(), "task=detect", "model=" + model.string(), "tile_size=64", "overlap=16",
                 "batch_size=4", "threads=1", "workers=1", "outputs=run", "output_dir=" + (dir / name).string()});
    return run_command(argv);
  };
  const auto one = run({"--gpus", "a100:1"}, "one");
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  const auto sixteen = run({"--nodes", "8", "--gpus", "a100:2"}, "sixteen");
  ASSERT_EQ(sixteen.exit_code, 0) << sixteen.out << sixteen.err;

  // The table is written in the order of the rasters and their rows of tiles, whichever
  // rank did which tile: the same bytes.
  const auto csv = read_file(dir / "one" / "run_detections.csv");
  EXPECT_EQ(read_file(dir / "sixteen" / "run_detections.csv"), csv);
  const auto detections = layer_lines(dir / "one" / "run_detections.gpkg", "detections");
  // Header, and per raster 6 x 6 distinct boxes of 16 px over its 96 px (the overlap's copies merged).
  ASSERT_EQ(detections.size(), 1U + kRasters * 36U);
  EXPECT_EQ(layer_lines(dir / "sixteen" / "run_detections.gpkg", "detections"), detections);
  const auto rasters = layer_lines(dir / "one" / "run_detections.gpkg", "rasters");
  ASSERT_EQ(rasters.size(), 1U + kRasters);
  EXPECT_EQ(layer_lines(dir / "sixteen" / "run_detections.gpkg", "rasters"), rasters);

  // Every rank's summary: its host, its share of the tiles, its memory over its whole life.
  const auto job_id = job_id_of(sixteen);
  const auto ranks = rank_summaries(logs, job_id, 16);
  std::set<std::string> hosts;
  std::int64_t tiles = 0;
  for (const auto& rank : ranks) {
    hosts.insert(rank.host);
    tiles += rank.tiles;
    EXPECT_GT(rank.host_peak_bytes, 0) << "rank " << rank.rank;
  }
  EXPECT_EQ(hosts.size(), 8U);
  EXPECT_EQ(tiles, kRasters * kTilesPerRaster);
  const auto table = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "nodes x ranks: 8x2")) << table.out;
  for (int node = 1; node <= 8; ++node) {
    EXPECT_TRUE(contains(table.out, fmt::format(" node{} ", node))) << table.out;
  }
}

}  // namespace
