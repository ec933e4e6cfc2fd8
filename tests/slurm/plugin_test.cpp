// The SPANK plugin on the real local cluster (gpu:a100:4 on one node), used the way a
// user would: srun and sbatch with --mgpr, looking at what the tasks see.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::CommandResult;
using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::read_file;
using mgpr::test::scratch;
using mgpr::test::srun;
namespace fs = std::filesystem;

using Variables = std::map<std::string, std::string>;
using TaskVariables = std::map<int, Variables>;  // task id -> its environment

// Parses `srun --label env` output: lines "<task>: NAME=VALUE".
TaskVariables parse_labelled_env(const std::string& out) {
  TaskVariables tasks;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(": ");
    const auto equals = line.find('=', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || equals == std::string::npos) continue;
    try {
      const int task = std::stoi(line.substr(0, colon));
      tasks[task][line.substr(colon + 2, equals - colon - 2)] = line.substr(equals + 1);
    } catch (const std::exception&) {
      // not a labelled line
    }
  }
  return tasks;
}

std::string value_of(const Variables& variables, const std::string& name) {
  const auto found = variables.find(name);
  return found == variables.end() ? "<unset>" : found->second;
}

void expect_one_distinct_gpu_per_rank(const TaskVariables& tasks, int ranks) {
  ASSERT_EQ(tasks.size(), static_cast<std::size_t>(ranks));
  std::set<std::string> devices;
  std::set<std::string> ranks_seen;
  for (const auto& [task, env] : tasks) {
    ranks_seen.insert(value_of(env, "RANK"));
    EXPECT_EQ(value_of(env, "RANK"), std::to_string(task));
    EXPECT_EQ(value_of(env, "WORLD_SIZE"), std::to_string(ranks));
    EXPECT_EQ(value_of(env, "LOCAL_RANK"), std::to_string(task));  // one node
    EXPECT_EQ(value_of(env, "LOCAL_WORLD_SIZE"), std::to_string(ranks));
    EXPECT_EQ(value_of(env, "NODE_RANK"), "0");
    EXPECT_EQ(value_of(env, "GROUP_RANK"), "0");
    EXPECT_EQ(value_of(env, "MASTER_ADDR"), value_of(env, "SLURMD_NODENAME"));
    EXPECT_EQ(value_of(env, "MASTER_ADDR"), value_of(tasks.begin()->second, "MASTER_ADDR"));
    EXPECT_EQ(value_of(env, "MASTER_PORT"), value_of(tasks.begin()->second, "MASTER_PORT"));
    const auto device = value_of(env, "CUDA_VISIBLE_DEVICES");
    EXPECT_EQ(device.find(','), std::string::npos) << "task " << task << " sees " << device;
    devices.insert(device);
  }
  EXPECT_EQ(devices.size(), static_cast<std::size_t>(ranks)) << "ranks share a GPU";
  const int port = std::stoi(value_of(tasks.begin()->second, "MASTER_PORT"));
  EXPECT_GE(port, 29500);
  EXPECT_LE(port, 29999);
}

TEST(Plugin, TwoRanksGetTheirRankAndOneGpuEach) {
  const auto logs = scratch("plugin-two-ranks");
  const auto result = srun(logs, {"--label", "--mgpr", "-N1", "-n2", "--gpus=a100:2", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_one_distinct_gpu_per_rank(parse_labelled_env(result.out), 2);
}

TEST(Plugin, FourRanksOnFourGpus) {
  const auto logs = scratch("plugin-four-ranks");
  const auto result = srun(logs, {"--label", "--mgpr", "-N1", "-n4", "--gpus=a100:4", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_one_distinct_gpu_per_rank(parse_labelled_env(result.out), 4);
}

TEST(Plugin, BindNoneLeavesDevicesAlone) {
  const auto logs = scratch("plugin-bind-none");
  const auto result = srun(logs, {"--label", "--mgpr", "--mgpr-bind=none", "-n2", "--gpus=a100:2", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto tasks = parse_labelled_env(result.out);
  ASSERT_EQ(tasks.size(), 2U) << result.out;
  for (const auto& [task, env] : tasks) {
    EXPECT_EQ(value_of(env, "RANK"), std::to_string(task));
    EXPECT_EQ(value_of(env, "CUDA_VISIBLE_DEVICES"), "0,1");  // Slurm's value, untouched
  }
}

TEST(Plugin, CpuRunWithBindNone) {
  const auto logs = scratch("plugin-cpu");
  const auto result = srun(logs, {"--label", "--mgpr", "--mgpr-bind=none", "-n2", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto tasks = parse_labelled_env(result.out);
  ASSERT_EQ(tasks.size(), 2U) << result.out;
  EXPECT_EQ(value_of(tasks.at(1), "RANK"), "1");
  EXPECT_EQ(value_of(tasks.at(1), "CUDA_VISIBLE_DEVICES"), "<unset>");
}

TEST(Plugin, PortConfigAndLogDirOptions) {
  const auto logs = scratch("plugin-options");
  const auto result =
      srun(logs, {"--label", "--mgpr=/data/run.toml", "--mgpr-port=31234", "-n1", "--gpus=a100:1", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto env = parse_labelled_env(result.out).at(0);
  EXPECT_EQ(value_of(env, "MASTER_PORT"), "31234");
  EXPECT_EQ(value_of(env, "MGPR_CONFIG"), "/data/run.toml");
  EXPECT_EQ(value_of(env, "MGPR_LOG_DIR"), logs.string());  // kept from the task's environment
}

TEST(Plugin, DefaultLogDirIsTheSubmitDirsSlurmLogs) {
  const auto result = run_command({"srun", "--label", "--mgpr", "-n1", "--gpus=a100:1", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto env = parse_labelled_env(result.out).at(0);
  EXPECT_EQ(value_of(env, "MGPR_LOG_DIR"),
            (fs::current_path() / "slurm_logs" / value_of(env, "SLURM_JOB_ID")).string());
}

TEST(Plugin, WithoutMgprNothingIsSet) {
  const auto result = run_command({"srun", "--label", "-n2", "--gpus=a100:2", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const auto& [task, env] : parse_labelled_env(result.out)) {
    EXPECT_EQ(value_of(env, "RANK"), "<unset>");
    EXPECT_EQ(value_of(env, "MASTER_PORT"), "<unset>");
    EXPECT_EQ(value_of(env, "CUDA_VISIBLE_DEVICES"), "0,1");
  }
}

TEST(Plugin, FewerTasksThanGpusIsRefusedWithBothNumbers) {
  const auto logs = scratch("plugin-geometry");
  const auto result = srun(logs, {"--mgpr", "--ntasks-per-node=1", "--gpus=a100:2", "echo", "program-ran"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_FALSE(contains(result.out, "program-ran")) << "the program must not start";
  EXPECT_TRUE(contains(result.err, "mgpr: refused:")) << result.err;
  EXPECT_TRUE(contains(result.err, "1 task per node but has 2 GPUs per node")) << result.err;
  EXPECT_TRUE(contains(result.err, "--ntasks-per-node=2")) << result.err;
  EXPECT_TRUE(contains(result.err, "mgpr-submit")) << result.err;
  const auto diagnoses = read_file(logs / "diagnoses.log");
  EXPECT_TRUE(contains(diagnoses, "1 task per node but has 2 GPUs per node")) << diagnoses;
}

TEST(Plugin, TwoTasksOnFourGpusIsRefused) {
  const auto logs = scratch("plugin-geometry-4");
  const auto result = srun(logs, {"--mgpr", "-n2", "--gpus=a100:4", "true"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.err, "2 tasks per node but has 4 GPUs per node")) << result.err;
}

TEST(Plugin, BindGpuWithoutGpuIsRefusedWithTheCpuHint) {
  const auto logs = scratch("plugin-no-gpu");
  const auto result = srun(logs, {"--mgpr", "-n1", "echo", "program-ran"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_FALSE(contains(result.out, "program-ran"));
  EXPECT_TRUE(contains(result.err, "has no GPU")) << result.err;
  EXPECT_TRUE(contains(result.err, "--mgpr-bind=none for CPU runs")) << result.err;
}

TEST(Plugin, BadOptionValuesAreRefusedByName) {
  const std::string huge(100 * 1024, '9');
  for (const std::string& bad : {std::string("abc"), std::string("-5"), std::string("1e99"), std::string(""), huge}) {
    const auto result = run_command({"srun", "--mgpr-timeout=" + bad, "-n1", "true"});
    EXPECT_NE(result.exit_code, 0) << bad.substr(0, 20);
    EXPECT_TRUE(contains(result.err, "mgpr: --mgpr-timeout:")) << result.err.substr(0, 500);
    EXPECT_TRUE(contains(result.err, "is not a whole number")) << result.err.substr(0, 500);
    // srun itself then echoes the whole argument; the plugin's own line quotes it short.
    const auto ours = result.err.find("mgpr: --mgpr-timeout:");
    const auto line_end = result.err.find('\n', ours);
    if (ours != std::string::npos) {
      EXPECT_LT(line_end - ours, 300U) << "a bad value is quoted short";
    }
  }
  // The cluster still runs steps afterwards.
  EXPECT_EQ(run_command({"srun", "-n1", "true"}).exit_code, 0);
}

TEST(Plugin, BatchScriptIsNotARankButItsStepsAre) {
  const auto dir = scratch("plugin-batch");
  const auto script = dir / "job.sh";
  // The steps' log folder goes to scratch, not under the test's working directory.
  std::ofstream(script) << "#!/bin/bash\n"
                           "#SBATCH --mgpr\n"
                           "#SBATCH --gpus=a100:2\n"
                           "#SBATCH -n2\n"
                           "export MGPR_LOG_DIR="
                        << (dir / "logs").string()
                        << "\n"
                           "echo \"batch RANK=${RANK-unset}\"\n"
                           "srun --label env\n";
  const auto out = dir / "job.out";
  const auto result = run_command({"sbatch", "--wait", "-o", out.string(), "-D", dir.string(), script.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err << read_file(out);
  const auto text = read_file(out);
  EXPECT_TRUE(contains(text, "batch RANK=unset\n")) << text;
  expect_one_distinct_gpu_per_rank(parse_labelled_env(text), 2);
}

TEST(Plugin, ConcurrentStepsGetDifferentPortsAndTheirOwnGpus) {
  const auto dir = scratch("plugin-concurrent");
  const auto script = dir / "job.sh";
  // Two 2-GPU steps side by side: the second one's GPUs are 2,3 (global indices).
  std::ofstream(script) << "#!/bin/bash\n"
                           "#SBATCH --mgpr\n"
                           "#SBATCH --gpus=a100:4\n"
                           "#SBATCH -n4\n"
                           "export MGPR_LOG_DIR="
                        << (dir / "logs").string()
                        << "\n"
                           "for i in 1 2; do\n"
                           "  srun --exact -n2 --gpus=a100:2 bash -c "
                           "'echo \"step=$SLURM_STEP_ID rank=$RANK port=$MASTER_PORT gpu=$CUDA_VISIBLE_DEVICES\"; "
                           "sleep 1' &\n"
                           "done\n"
                           "wait\n";
  const auto out = dir / "job.out";
  const auto result = run_command({"sbatch", "--wait", "-o", out.string(), "-D", dir.string(), script.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err << read_file(out);
  std::map<std::string, std::set<std::string>> ports_by_step;
  std::set<std::string> gpus;
  std::istringstream lines(read_file(out));
  std::string step, rank, port, gpu;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    fields >> step >> rank >> port >> gpu;
    ports_by_step[step].insert(port);
    gpus.insert(gpu);
  }
  ASSERT_EQ(ports_by_step.size(), 2U) << read_file(out);
  const auto& first = ports_by_step.begin()->second;
  const auto& second = std::next(ports_by_step.begin())->second;
  ASSERT_EQ(first.size(), 1U);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_NE(*first.begin(), *second.begin()) << "two steps share a MASTER_PORT";
  EXPECT_EQ(gpus, (std::set<std::string>{"gpu=0", "gpu=1", "gpu=2", "gpu=3"})) << read_file(out);
}

// strict=0 timeout=2 in plugstack.conf: a second cluster beside the shared one, whose
// plugin has the site defaults. Stopped here, and by the slurm.lenient_cluster_stop cleanup test
// should this process die first.
class LenientCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto started = run_command({MGPR_LOCAL_SLURM, "start", MGPR_LENIENT_CLUSTER_DIR, "--plugin", MGPR_PLUGIN,
                                      "--plugin-args", "strict=0 timeout=2"});
    start_error_ = started.exit_code == 0 ? "" : started.err;
  }
  static void TearDownTestSuite() { run_command({MGPR_LOCAL_SLURM, "stop", MGPR_LENIENT_CLUSTER_DIR}); }
  void SetUp() override { ASSERT_TRUE(start_error_.empty()) << "second cluster did not start: " << start_error_; }

  static CommandResult lenient_srun(std::vector<std::string> args) {
    std::vector<std::string> argv{"env", std::string("SLURM_CONF=") + MGPR_LENIENT_CLUSTER_DIR + "/etc/slurm.conf",
                                  "srun"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }

  static inline std::string start_error_;
};

TEST_F(LenientCluster, StrictOffWarnsAndRunsTheStep) {
  const auto logs = scratch("plugin-lenient");
  const auto result = lenient_srun({"--export=ALL,MGPR_LOG_DIR=" + logs.string(), "--label", "--mgpr",
                                    "--ntasks-per-node=1", "--gpus=a100:2", "env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.err, "mgpr: warning (strict=0")) << result.err;
  EXPECT_TRUE(contains(result.err, "1 task per node but has 2 GPUs per node")) << result.err;
  const auto env = parse_labelled_env(result.out).at(0);
  EXPECT_EQ(value_of(env, "RANK"), "0");
  EXPECT_EQ(value_of(env, "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "warning (strict=0")) << "diagnosis not recorded";
}

TEST_F(LenientCluster, TheSiteTimeoutLeavesAProgramThatDoesNotReportAlone) {
  const auto logs = scratch("plugin-site-timeout-quiet");
  const auto result =
      lenient_srun({"--export=ALL,MGPR_LOG_DIR=" + logs.string(), "--mgpr", "-n2", "--gpus=a100:2", "sleep", "4"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(contains(result.err, "deadlock")) << result.err;
}

TEST_F(LenientCluster, AnArrivalArmsTheSiteTimeout) {
  const auto logs = scratch("plugin-site-timeout-armed");
  const auto result = lenient_srun({"--export=ALL,MGPR_LOG_DIR=" + logs.string(), "--mgpr", "-n2", "--gpus=a100:2",
                                    "bash", "-c", "[ $RANK = 1 ] || touch \"$MGPR_PROGRESS_FILE\"; sleep 600"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.err, "rank 1 did not reach rendezvous within 2 s")) << result.err;
}

}  // namespace
