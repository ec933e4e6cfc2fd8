// The plugin's decisions, without Slurm: which steps are ranks, MASTER_PORT, the GPU a
// rank keeps, the log folder, the variables a task gets, the geometry rule, diagnoses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <slurm/slurm.h>

#include "diagnoses.hpp"
#include "geometry.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/text.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"
#include "task_environment.hpp"
#include "unit/job_users.hpp"

namespace {

using namespace mgpr::spank;
using mgpr::derive_master_port;
using mgpr::device_for_rank;
using mgpr::job_log_dir;
using mgpr::split_list;
namespace fs = std::filesystem;

using mgpr::test::contains;

TEST(SpankSteps, OnlyRealStepsAreRanks) {
  EXPECT_TRUE(is_rank_step(0));
  EXPECT_TRUE(is_rank_step(17));
  EXPECT_FALSE(is_rank_step(SLURM_BATCH_SCRIPT));
  EXPECT_FALSE(is_rank_step(SLURM_EXTERN_CONT));
  EXPECT_FALSE(is_rank_step(SLURM_INTERACTIVE_STEP));
}

TEST(SpankPort, StaysInRangeForEveryJobAndStep) {
  for (std::uint32_t job : {0U, 1U, 12345U, 4294967290U}) {
    for (std::uint32_t step : {0U, 1U, 499U, 500U, 65000U}) {
      const int port = derive_master_port(job, step, 29500, 29999);
      EXPECT_GE(port, 29500);
      EXPECT_LE(port, 29999);
    }
  }
  EXPECT_EQ(derive_master_port(7, 3, 40000, 40000), 40000);
}

TEST(SpankPort, StepsOfOneJobNeverShareAPort) {
  std::set<int> ports;
  for (std::uint32_t step = 0; step < 500; ++step) ports.insert(derive_master_port(4242, step, 29500, 29999));
  EXPECT_EQ(ports.size(), 500U);
}

TEST(SpankPort, NeighbouringJobsAreApart) {
  std::set<int> ports;
  for (std::uint32_t job = 100; job < 105; ++job) {
    for (std::uint32_t step = 0; step < 4; ++step) ports.insert(derive_master_port(job, step, 29500, 29999));
  }
  EXPECT_EQ(ports.size(), 20U);
}

TEST(SpankDevices, SplitsSlurmsList) {
  EXPECT_EQ(split_list("0,1,2"), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(split_list("3"), (std::vector<std::string>{"3"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_EQ(split_list(",2,,3,"), (std::vector<std::string>{"2", "3"}));
}

TEST(SpankDevices, PicksByPositionForGlobalOrRenumberedIndices) {
  const std::vector<std::string> global{"2", "3"};
  EXPECT_EQ(device_for_rank(global, 0), "2");
  EXPECT_EQ(device_for_rank(global, 1), "3");
  const std::vector<std::string> renumbered{"0", "1"};
  EXPECT_EQ(device_for_rank(renumbered, 1), "1");
  const std::vector<std::string> uuids{"GPU-aaaa", "GPU-bbbb", "GPU-cccc", "GPU-dddd"};
  EXPECT_EQ(device_for_rank(uuids, 3), "GPU-dddd");
}

TEST(SpankDevices, KeepsAPerTaskBindingAndSharesWhenShort) {
  const std::vector<std::string> bound{"5"};
  EXPECT_EQ(device_for_rank(bound, 3), "5");  // --gpus-per-task=1: Slurm bound it already
  const std::vector<std::string> two{"0", "1"};
  EXPECT_EQ(device_for_rank(two, 2), "0");  // strict=0, 3 ranks on 2 GPUs
  EXPECT_EQ(device_for_rank({}, 0), std::nullopt);
}

TEST(SpankLogDir, PlugstackThenTaskThenSubmitDir) {
  EXPECT_EQ(job_log_dir("/scratch/logs", "/home/u/x", "/home/u", "42"), fs::path("/scratch/logs/42"));
  EXPECT_EQ(job_log_dir("logs", std::nullopt, "/home/u", "42"), fs::path("/home/u/logs/42"));
  EXPECT_EQ(job_log_dir("", "/home/u/run/slurm_logs/42", "/home/u", "42"), fs::path("/home/u/run/slurm_logs/42"));
  EXPECT_EQ(job_log_dir("", std::nullopt, "/home/u", "42"), fs::path("/home/u/slurm_logs/42"));
  EXPECT_EQ(job_log_dir("", "", "/home/u", "42"), fs::path("/home/u/slurm_logs/42"));
}

std::map<std::string, std::string> as_map(const Environment& environment) {
  return {environment.begin(), environment.end()};
}

TaskFacts second_rank_on_second_node() {
  TaskFacts facts;
  facts.job_id = 1000;
  facts.step_id = 2;
  facts.rank = 3;
  facts.world_size = 4;
  facts.local_rank = 1;
  facts.local_world_size = 2;
  facts.node_rank = 1;
  facts.master_addr = "node01";
  facts.visible_devices = "2,3";
  facts.submit_dir = "/home/u/run";
  return facts;
}

StepSettings default_settings() {
  StepSettings settings;
  settings.enabled = true;
  settings.port_min = 29500;
  settings.port_max = 29999;
  return settings;
}

TEST(SpankTaskEnvironment, TorchrunVariablesAndOneGpu) {
  const auto env = as_map(task_environment(second_rank_on_second_node(), default_settings()));
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("NODE_RANK"), "1");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "node01");
  EXPECT_EQ(env.at("MASTER_PORT"), std::to_string(derive_master_port(1000, 2, 29500, 29999)));
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(env.at("MGPR_LOG_DIR"), "/home/u/run/slurm_logs/1000");
  EXPECT_EQ(env.count("MGPR_CONFIG"), 0U);
}

TEST(SpankTaskEnvironment, OptionsShowInTheEnvironment) {
  auto settings = default_settings();
  settings.port = 31234;
  settings.config_path = "/home/u/run.toml";
  settings.bind = Bind::kNone;
  const auto env = as_map(task_environment(second_rank_on_second_node(), settings));
  EXPECT_EQ(env.at("MASTER_PORT"), "31234");
  EXPECT_EQ(env.at("MGPR_CONFIG"), "/home/u/run.toml");
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0U);  // bind=none leaves Slurm's value alone
}

TEST(SpankTaskEnvironment, ProgressFileOnlyWhenTheWatchdogReadsIt) {
  auto facts = second_rank_on_second_node();
  EXPECT_EQ(as_map(task_environment(facts, default_settings())).count("MGPR_PROGRESS_FILE"), 0U);
  facts.progress_dir = "/home/u/run/slurm_logs/1000/progress/2";
  const auto env = as_map(task_environment(facts, default_settings()));
  EXPECT_EQ(env.at("MGPR_PROGRESS_FILE"), "/home/u/run/slurm_logs/1000/progress/2/rank-00003");
}

TEST(SpankTaskEnvironment, NoGpusNoDeviceVariable) {
  auto facts = second_rank_on_second_node();
  facts.visible_devices.reset();
  const auto env = as_map(task_environment(facts, default_settings()));
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0U);
}

NodeShape shape(int tasks, int gpus) { return {77, 0, "gpu01", tasks, gpus}; }

TEST(SpankGeometry, OneTaskPerGpuRuns) {
  EXPECT_EQ(check_geometry(shape(2, 2), Bind::kGpu, true).verdict, Verdict::kRun);
  EXPECT_EQ(check_geometry(shape(4, 4), Bind::kGpu, true).verdict, Verdict::kRun);
}

TEST(SpankGeometry, FewerTasksThanGpusIsRefusedWithBothNumbersAndTheFix) {
  const auto finding = check_geometry(shape(1, 2), Bind::kGpu, true);
  EXPECT_EQ(finding.verdict, Verdict::kRefuse);
  EXPECT_TRUE(contains(finding.message, "refused:")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "step 77.0 on gpu01")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "1 task per node")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "2 GPUs per node")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "--ntasks-per-node=2")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "mgpr-submit")) << finding.message;
  EXPECT_EQ(finding.message.find('\n'), std::string::npos);
}

TEST(SpankGeometry, MoreTasksThanGpusIsRefusedToo) {
  const auto finding = check_geometry(shape(4, 2), Bind::kGpu, true);
  EXPECT_EQ(finding.verdict, Verdict::kRefuse);
  EXPECT_TRUE(contains(finding.message, "4 tasks per node but has 2 GPUs per node")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "share GPUs")) << finding.message;
}

TEST(SpankGeometry, NoGpuWithBindGpuHintsBindNone) {
  const auto finding = check_geometry(shape(2, 0), Bind::kGpu, true);
  EXPECT_EQ(finding.verdict, Verdict::kRefuse);
  EXPECT_TRUE(contains(finding.message, "has no GPU")) << finding.message;
  EXPECT_TRUE(contains(finding.message, "--mgpr-bind=none for CPU runs")) << finding.message;
}

TEST(SpankGeometry, StrictOffWarnsAndBindNoneChecksNothing) {
  const auto warning = check_geometry(shape(1, 2), Bind::kGpu, false);
  EXPECT_EQ(warning.verdict, Verdict::kWarn);
  EXPECT_TRUE(contains(warning.message, "warning (strict=0")) << warning.message;
  EXPECT_TRUE(contains(warning.message, "1 task per node but has 2 GPUs")) << warning.message;
  EXPECT_EQ(check_geometry(shape(1, 2), Bind::kNone, true).verdict, Verdict::kRun);
  EXPECT_EQ(check_geometry(shape(3, 0), Bind::kNone, true).verdict, Verdict::kRun);
}

TEST(SpankGeometry, GpusComeFromSlurmsStepList) {
  EXPECT_EQ(count_step_gpus(std::nullopt), 0);
  EXPECT_EQ(count_step_gpus(""), 0);
  EXPECT_EQ(count_step_gpus("0,1"), 2);
  EXPECT_EQ(count_step_gpus("2,3,5,7"), 4);
}

TEST(SpankDiagnoses, OneLinePerFinding) {
  const auto line = diagnosis_line(0, "refused: two\nlines");
  EXPECT_EQ(line, "1970-01-01T00:00:00Z mgpr: refused: two lines\n");
}

TEST(SpankDiagnoses, AppendsToTheJobsFileCreatingTheFolder) {
  const mgpr::test::TempDir root("mgpr-diagnoses-");
  const auto job_dir = root.path() / "slurm_logs" / "42";
  const auto me = mgpr::test::this_process_user();
  append_diagnosis(me, job_dir, "first");
  append_diagnosis(me, job_dir, "second");
  std::ifstream in(job_dir / "diagnoses.log");
  std::string first;
  std::string second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_TRUE(first.ends_with(" mgpr: first")) << first;
  EXPECT_TRUE(second.ends_with(" mgpr: second")) << second;
}

}  // namespace
