// Device cgroups on two hosts (task/cgroup, ConstrainDevices=yes): a rank opens the
// device its CUDA_VISIBLE_DEVICES names and is refused the others', also when Slurm
// binds one GPU per task and renumbers CUDA_VISIBLE_DEVICES from 0.
//
// The fake GPUs are character devices of NVIDIA's major with no driver behind them:
// an open the device cgroup lets through fails with ENXIO ("no such device"), one it
// refuses fails with EPERM. That difference is what is checked.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "slurm/multi_node/multi_node_support.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using namespace mgpr::test::multi_node;

bool devices_constrained() {
  const auto config = run_command({"scontrol", "show", "config"});
  return std::regex_search(config.out, std::regex(R"(TaskPlugin\s*=\s*task/cgroup)"));
}

// Per rank, one line: "rank R host H visible V nvidia0=ENXIO nvidia1=EPERM".
const char* kProbe = R"sh(d=$1/dev/$(hostname)
line="rank $RANK host $(hostname) visible $CUDA_VISIBLE_DEVICES"
for f in "$d"/nvidia*; do
  if err=$(LC_ALL=C bash -c 'exec 3<"$1"' _ "$f" 2>&1); then r=open
  elif [[ $err == *"No such device"* ]]; then r=ENXIO
  elif [[ $err == *"not permitted"* ]]; then r=EPERM
  else r="other($err)"; fi
  line+=" $(basename "$f")=$r"
done
echo "$line")sh";

struct RankDevices {
  std::string host;
  std::string visible;
  std::vector<std::string> allowed;  // device files the cgroup lets the rank open
  std::vector<std::string> refused;
};

std::map<int, RankDevices> probe(const std::vector<std::string>& srun_options) {
  const auto logs = scratch("devices-probe");
  std::vector<std::string> args{"--mgpr"};
  args.insert(args.end(), srun_options.begin(), srun_options.end());
  args.insert(args.end(), {"bash", "-c", kProbe, "probe", kClusterDir.string()});
  const auto run = mgpr::test::srun(logs, args);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  std::map<int, RankDevices> ranks;
  const std::regex line(R"(rank (\d+) host (\S+) visible (\S*)((?: \S+=\S+)+))");
  const std::regex device(R"( (nvidia\d+)=(\S+))");
  std::istringstream lines(run.out);
  for (std::string text; std::getline(lines, text);) {
    std::smatch match;
    if (!std::regex_match(text, match, line)) {
      ADD_FAILURE() << "unexpected probe line: " << text;
      continue;
    }
    auto& rank = ranks[std::stoi(match[1])];
    rank.host = match[2];
    rank.visible = match[3];
    const std::string devices = match[4];
    for (std::sregex_iterator it(devices.begin(), devices.end(), device), end; it != end; ++it) {
      const std::string result = (*it)[2];
      EXPECT_TRUE(result == "ENXIO" || result == "EPERM") << text;
      (result == "ENXIO" ? rank.allowed : rank.refused).push_back((*it)[1]);
    }
  }
  return ranks;
}

TEST(MultiNode, WithDeviceCgroupsEachRankOpensOnlyItsOwnGpu) {
  if (!devices_constrained()) {
    GTEST_SKIP() << "the multi-node cluster runs without --constrain-devices: this machine has no cgroup v1 "
                    "devices controller (see the cluster_start test's output)";
  }
  // Slurm binds one GPU per task: each task's cgroup holds its own device, and
  // CUDA_VISIBLE_DEVICES is renumbered to 0 on every rank. The plugin keeps it.
  const auto bound = probe({"-N2", "--ntasks-per-node=2", "--gpus-per-node=a100:2", "--gpu-bind=single:1"});
  ASSERT_EQ(bound.size(), 4U);
  std::map<std::string, std::set<std::string>> owned_by_host;
  for (const auto& [rank, devices] : bound) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(devices.host, kHosts.at(static_cast<std::size_t>(rank / 2)));
    EXPECT_EQ(devices.visible, "0") << "renumbered by the cgroup";
    // Index 0 of what the rank can see is the one device the cgroup lets it open.
    ASSERT_EQ(devices.allowed.size(), 1U);
    EXPECT_EQ(devices.refused.size(), 1U);
    owned_by_host[devices.host].insert(devices.allowed.front());
  }
  for (const auto& host : kHosts) EXPECT_EQ(owned_by_host[host].size(), 2U) << host << ": ranks share a GPU";

  // One GPU per node of two: the rank opens the one it was given and not the other.
  const auto one = probe({"-N2", "--ntasks-per-node=1", "--gpus-per-node=a100:1"});
  ASSERT_EQ(one.size(), 2U);
  for (const auto& [rank, devices] : one) {
    EXPECT_EQ(devices.visible, "0") << "rank " << rank;
    EXPECT_EQ(devices.allowed.size(), 1U) << "rank " << rank;
    EXPECT_EQ(devices.refused.size(), 1U) << "rank " << rank;
  }

  // The whole node's GPUs to the step (mgpr-submit's default, NCCL's peer access needs
  // it): each rank is given a distinct one of them by position, and may open it.
  const auto step = probe({"-N2", "--ntasks-per-node=2", "--gpus-per-node=a100:2"});
  ASSERT_EQ(step.size(), 4U);
  for (const auto& [rank, devices] : step) {
    EXPECT_EQ(devices.visible, std::to_string(rank % 2)) << "rank " << rank;
    EXPECT_EQ(devices.allowed.size(), 2U) << "rank " << rank;
  }
}

TEST(MultiNode, WithDeviceCgroupsAStepOfTheWrongGeometryIsStillRefused) {
  const auto logs = scratch("devices-geometry");
  const auto run =
      mgpr::test::srun(logs, {"--mgpr", "-N2", "--ntasks-per-node=1", "--gpus-per-node=a100:2", "echo", "program-ran"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_FALSE(contains(run.out, "program-ran")) << "the program must not start";
  EXPECT_TRUE(contains(run.err, "1 task per node but has 2 GPUs per node")) << run.err;
  EXPECT_TRUE(contains(run.err, "--ntasks-per-node=2")) << run.err;
}

}  // namespace
