#pragma once
// Helpers of the multi-node tests: they run on a second local cluster of eight hosts
// (tools/local-slurm/local-slurm start DIR --nodes 8 --gpus a100:2, network namespaces,
// one slurmd each; jobs of two nodes get the first two), whose SLURM_CONF CTest gives them.
#include <algorithm>
#include <filesystem>
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

}  // namespace mgpr::test::multi_node
