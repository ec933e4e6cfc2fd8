// Jobs across two hosts of the local cluster, as a user submits them: every rank's
// place in the job (from the environment the plugin gave it, recorded in its summary),
// rendezvous across hosts, every tile once, and the same results whatever the geometry.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "slurm/multi_node/multi_node_support.hpp"
#include "support/known_squares.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using namespace mgpr::test::multi_node;

bool needs_runtime_tools() { return std::string(MGPR_TEST_IMAGE).empty() || std::string(MGPR_TEST_MODEL).empty(); }

// A 512 x 384 image with the known squares, and the threshold detector.
struct Scene {
  fs::path image;
  fs::path detector;
};
Scene make_scene(const fs::path& dir) {
  Scene scene{dir / "scene.tif", dir / "detector.pt"};
  std::vector<std::string> make_image{MGPR_TEST_IMAGE, scene.image.string(), "--width", "512", "--height", "384"};
  for (const auto& square : mgpr::test::kKnownSquares) make_image.insert(make_image.end(), {"--square", square});
  EXPECT_EQ(run_command(make_image).exit_code, 0);
  EXPECT_EQ(run_command({MGPR_TEST_MODEL, "detector", scene.detector.string()}).exit_code, 0);
  return scene;
}

// 512 x 384 in tiles of 64 with overlap 16: columns every 48 px (11 with the last at
// 448), rows likewise (8 with the last at 320).
constexpr int kTiles = 11 * 8;

mgpr::CommandResult submit(const std::vector<std::string>& geometry, const fs::path& logs,
                           const std::vector<std::string>& keys) {
  std::vector<std::string> argv{MGPR_SUBMIT, "--wait", "--log-dir", logs.string()};
  argv.insert(argv.end(), geometry.begin(), geometry.end());
  argv.insert(argv.end(), keys.begin(), keys.end());
  return run_command(argv);
}

TEST(MultiNode, TwoHostsByTwoGpusGiveEveryRankItsPlaceAndDoEveryTileOnce) {
  if (needs_runtime_tools()) GTEST_SKIP() << "needs mgpr-test-image and mgpr-test-model";
  const auto dir = scratch("two-by-two");
  const auto scene = make_scene(dir);
  const auto logs = dir / "logs";
  const auto run = submit({"--nodes", "2", "--gpus", "a100:2"}, logs,
                          {scene.image.string(), "task=classify", "tile_size=64", "overlap=16", "batch_size=2",
                           "sharding=dynamic", "output_dir=" + (dir / "out").string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto job_id = job_id_of(run);
  const auto ranks = rank_summaries(logs, job_id, 4);

  std::set<int> rank_ids;
  std::map<std::string, std::set<int>> local_ranks_by_host;
  std::map<std::string, std::set<std::string>> devices_by_host;
  std::int64_t tiles = 0;
  for (const auto& rank : ranks) {
    SCOPED_TRACE("rank " + std::to_string(rank.rank) + " on " + rank.host);
    rank_ids.insert(rank.rank);
    EXPECT_EQ(rank.world_size, 4);
    EXPECT_EQ(rank.local_world_size, 2);
    // Block distribution: ranks 0-1 on the first host, 2-3 on the second.
    EXPECT_EQ(rank.host, kHosts.at(static_cast<std::size_t>(rank.rank / 2)));
    EXPECT_EQ(rank.node_rank, rank.rank / 2);
    EXPECT_EQ(rank.local_rank, rank.rank % 2);
    EXPECT_EQ(rank.master_addr, "node1") << "rank 0's host, the same everywhere";
    EXPECT_EQ(rank.master_port, ranks.front().master_port);
    EXPECT_GT(rank.master_port, 0);
    EXPECT_EQ(rank.status, mgpr::RankStatus::kOk);
    local_ranks_by_host[rank.host].insert(rank.local_rank);
    devices_by_host[rank.host].insert(rank.visible_devices);
    EXPECT_FALSE(rank.visible_devices.empty());
    EXPECT_EQ(rank.visible_devices.find(','), std::string::npos) << "one device per rank: " << rank.visible_devices;
    tiles += rank.tiles;
  }
  EXPECT_EQ(rank_ids, (std::set<int>{0, 1, 2, 3}));
  for (const auto& host : kHosts) {
    EXPECT_EQ(local_ranks_by_host[host], (std::set<int>{0, 1})) << host;
    EXPECT_EQ(devices_by_host[host].size(), 2U) << host << ": one distinct device per rank";
  }

  // MASTER_ADDR resolves on the other host to rank 0's host's own address.
  const auto there = local_slurm("exec", {"node2", "getent", "hosts", "node1"});
  const auto here = local_slurm("exec", {"node1", "sh", "-c", "ip -4 -o addr show dev eth0"});
  ASSERT_EQ(there.exit_code, 0) << there.err;
  const auto address = there.out.substr(0, there.out.find_first_of(" \t"));
  EXPECT_TRUE(contains(here.out, " " + address + "/")) << there.out << here.out;

  // Every tile once: the classification lists one row per tile, and the ranks' counts add up.
  EXPECT_EQ(tiles, kTiles);
  const auto rows = mgpr::test::read_csv_rows(dir / "out" / "scene_tiles.csv");
  std::set<std::pair<std::string, std::string>> tile_ids;
  for (const auto& row : rows) tile_ids.insert({row.at("row"), row.at("column")});
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(kTiles));
  EXPECT_EQ(tile_ids.size(), static_cast<std::size_t>(kTiles)) << "a tile is listed twice";

  const auto report = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(report.out, "total: 4 rank(s), 88 tiles")) << report.out;
  EXPECT_TRUE(contains(report.out, "nodes x ranks: 2x2")) << report.out;
  for (const auto& host : kHosts) EXPECT_TRUE(contains(report.out, " " + host + " ")) << report.out;
}

// The classification of a tile and the boxes of the whole image do not depend on how
// many ranks on how many hosts computed them.
TEST(MultiNode, OneRankTwoRanksOnOneHostAndTwoByTwoGiveTheSameResults) {
  if (needs_runtime_tools()) GTEST_SKIP() << "needs mgpr-test-image and mgpr-test-model";
  const auto dir = scratch("same-results");
  const auto scene = make_scene(dir);
  const std::map<std::string, std::vector<std::string>> geometries{
      {"1x1", {"--gpus", "a100:1"}}, {"1x2", {"--gpus", "a100:2"}}, {"2x2", {"--nodes", "2", "--gpus", "a100:2"}}};
  std::map<std::string, std::vector<std::map<std::string, std::string>>> classes;
  std::map<std::string, std::vector<std::string>> boxes;
  for (const auto& [name, geometry] : geometries) {
    SCOPED_TRACE(name);
    const auto out = dir / name;
    // Batches of one: a tile's scores then do not depend on which tiles share its batch.
    const auto classified = submit(geometry, dir / "logs",
                                   {scene.image.string(), "task=classify", "tile_size=64", "overlap=16", "batch_size=1",
                                    "sharding=dynamic", "output_dir=" + (out / "classify").string()});
    ASSERT_EQ(classified.exit_code, 0) << classified.out << classified.err;
    classes[name] = mgpr::test::read_csv_rows(out / "classify" / "scene_tiles.csv");
    const auto detected =
        submit(geometry, dir / "logs",
               {scene.image.string(), "task=detect", "model=" + scene.detector.string(), "tile_size=64", "overlap=16",
                "batch_size=2", "sharding=dynamic", "output_dir=" + (out / "detect").string()});
    ASSERT_EQ(detected.exit_code, 0) << detected.out << detected.err;
    // The GeoPackage's features as CSV text (GDAL's ogr2ogr), geometry included.
    const auto features = run_command({"ogr2ogr", "-f", "CSV", "/vsistdout/",
                                       (out / "detect" / "scene_detections.gpkg").string(), "-lco", "GEOMETRY=AS_WKT"});
    ASSERT_EQ(features.exit_code, 0) << features.err;
    boxes[name] = sorted_lines(features.out);
  }
  EXPECT_EQ(boxes.at("1x1").size(), 1 + mgpr::test::kKnownSquares.size()) << "header and one box per square";
  EXPECT_EQ(boxes.at("1x2"), boxes.at("1x1"));
  EXPECT_EQ(boxes.at("2x2"), boxes.at("1x1"));

  ASSERT_EQ(classes.at("1x1").size(), static_cast<std::size_t>(kTiles));
  for (const std::string other : {"1x2", "2x2"}) {
    ASSERT_EQ(classes.at(other).size(), classes.at("1x1").size()) << other;
    for (std::size_t tile = 0; tile < classes.at("1x1").size(); ++tile) {
      const auto& expected = classes.at("1x1")[tile];
      const auto& got = classes.at(other)[tile];
      for (const std::string column : {"row", "column", "x", "y", "center_x", "center_y", "label"}) {
        EXPECT_EQ(got.at(column), expected.at(column)) << other << " tile " << tile << " " << column;
      }
      // Same weights, same pixels, batches of one; the ranks' thread counts differ,
      // and with them the order of oneDNN's float sums.
      EXPECT_NEAR(std::stod(got.at("logit")), std::stod(expected.at("logit")), 1e-4) << other << " tile " << tile;
    }
  }
}

// Proof that torchrun-style programs (Lightning, plain torch.distributed) get a correct
// environment: an unchanged script, rendezvous by env://, an all-reduce over Gloo.
TEST(MultiNode, APlainTorchDistributedScriptAgreesOnTheSumAcrossHosts) {
  const std::string python = MGPR_TEST_PYTHON;
  if (python.empty() || run_command({python, "-c", "import torch.distributed"}).exit_code != 0) {
    GTEST_SKIP() << "needs a Python with torch (" << (python.empty() ? "MGPR_TEST_PYTHON unset" : python)
                 << "): scripts/install-deps installs Debian's python3-torch";
  }
  const auto dir = scratch("torch-distributed");
  const auto script = dir / "all_reduce.py";
  std::ofstream(script) << R"(import os, socket
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
total = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
print(f"rank={dist.get_rank()} world={dist.get_world_size()} host={socket.gethostname()} "
      f"local_rank={os.environ['LOCAL_RANK']} device={os.environ.get('CUDA_VISIBLE_DEVICES', '')} "
      f"sum={int(total.item())}", flush=True)
dist.destroy_process_group()
)";
  const auto run = mgpr::test::srun(dir, {"--mgpr", "-N2", "--ntasks-per-node=2", "--gpus-per-node=a100:2",
                                          "--kill-on-bad-exit=1", python, script.string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  for (int rank = 0; rank < 4; ++rank) {
    const auto host = kHosts.at(static_cast<std::size_t>(rank / 2));
    const auto line = "rank=" + std::to_string(rank) + " world=4 host=" + host +
                      " local_rank=" + std::to_string(rank % 2) + " device=" + std::to_string(rank % 2) + " sum=10";
    EXPECT_TRUE(contains(run.out, line)) << line << "\n" << run.out << run.err;
  }
}

}  // namespace
