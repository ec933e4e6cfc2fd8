#pragma once
// Helpers of the multi-node tests: they run on a second local cluster of eight hosts
// (tools/local-slurm/local-slurm start DIR --nodes 8 --gpus a100:2, network namespaces,
// one slurmd each; jobs of two nodes get the first two), whose SLURM_CONF CTest gives them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "mgpr/summary.hpp"
#include "slurm/test_support.hpp"

namespace mgpr::test::multi_node {

namespace fs = std::filesystem;

using mgpr::test::job_id_of;

inline const fs::path kClusterDir{MGPR_MULTI_NODE_CLUSTER_DIR};
// The hosts of a two-node job.
inline const std::vector<std::string> kHosts{"node1", "node2"};

// A fresh folder for one test's files, inside the multi-node cluster's folder.
inline fs::path scratch(const std::string& name) { return mgpr::test::scratch(name, kClusterDir); }

inline std::vector<RankSummary> rank_summaries(const fs::path& logs, const std::string& job_id, int world_size) {
  const JobLogLayout layout{logs, job_id};
  std::vector<RankSummary> ranks;
  for (int rank = 0; rank < world_size; ++rank) {
    const auto file = layout.rank_summary(rank);
    ranks.push_back(rank_summary_from_json(read_text_file(file), file.string()));
  }
  return ranks;
}

// `local-slurm COMMAND DIR ARGS...` on the multi-node cluster (processes, exec NODE CMD...).
inline CommandResult local_slurm(const std::string& command, const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv{MGPR_LOCAL_SLURM, command, kClusterDir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

// Processes on the cluster's hosts other than their slurmd: what a step left behind.
inline std::vector<std::string> stray_processes() {
  std::vector<std::string> strays;
  std::istringstream lines(local_slurm("processes").out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.ends_with(" slurmd")) strays.push_back(line);
  }
  return strays;
}

// Sorted lines of a text: outputs compared whatever order ranks wrote them in.
inline std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The keys of a run of `tiles` fake tiles of `delay` s each into `out`: 2 reader threads
// per rank, so 4 ranks at 0.5 s do 16 tiles/s.
inline std::vector<std::string> fake_run(int tiles, double delay, const fs::path& out) {
  return {"use_fake_data=true",
          "dummy_dataset_count=" + std::to_string(tiles),
          "dummy_dataset_delay=" + std::to_string(delay),
          "tile_size=64",
          "batch_size=1",
          "sharding=dynamic",
          "output_dir=" + out.string()};
}

// mgpr-submit on 2 hosts x 2 GPUs with `options`, then the run's keys.
inline CommandResult submit_two_by_two(const std::vector<std::string>& options, const std::vector<std::string>& keys) {
  std::vector<std::string> argv{MGPR_SUBMIT, "--nodes", "2", "--gpus", "a100:2"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), keys.begin(), keys.end());
  return run_command(argv);
}

using Rows = std::vector<std::map<std::string, std::string>>;

inline std::string tile_of(const std::map<std::string, std::string>& row) {
  return row.at("image") + "/" + row.at("row") + "/" + row.at("column");
}

// The job's classification of each fake tile equals an uninterrupted run's, each once.
inline void expect_same_tiles(const Rows& got, const Rows& expected) {
  ASSERT_EQ(got.size(), expected.size());
  std::map<std::string, const std::map<std::string, std::string>*> by_tile;
  for (const auto& row : expected) by_tile[tile_of(row)] = &row;
  std::set<std::string> seen;
  for (const auto& row : got) {
    const auto tile = tile_of(row);
    EXPECT_TRUE(seen.insert(tile).second) << "tile " << tile << " listed twice";
    ASSERT_TRUE(by_tile.contains(tile)) << "tile " << tile;
    EXPECT_EQ(row.at("label"), by_tile.at(tile)->at("label")) << "tile " << tile;
    EXPECT_NEAR(std::stod(row.at("logit")), std::stod(by_tile.at(tile)->at("logit")), 1e-4) << "tile " << tile;
  }
}

}  // namespace mgpr::test::multi_node
