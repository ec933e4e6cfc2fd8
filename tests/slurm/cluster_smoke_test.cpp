// The local cluster is a real Slurm: these tests talk to it only through Slurm's own
// commands, as a user would.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
namespace fs = std::filesystem;

using mgpr::test::scratch;

TEST(Cluster, SinfoShowsIdleNodeWithFourA100) {
  const auto result = run_command({"sinfo", "-N", "-h", "-o", "%t %G"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("idle"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("gpu:a100:4"), std::string::npos) << result.out;
}

TEST(Cluster, SbatchWaitRunsATrivialJob) {
  const auto dir = scratch("trivial");
  const auto out = dir / "job.out";
  const auto result = run_command({"sbatch", "--wait", "--parsable", "-o", out.string(), "--gpus=a100:2", "--wrap",
                                   "echo hello from $SLURM_JOB_ID; echo gpus=$CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("hello from"), std::string::npos) << text;
  // Two fake GPUs bound through gres: two device indices.
  EXPECT_NE(text.find("gpus=0,1"), std::string::npos) << text;
}

TEST(Cluster, SbatchWaitReturnsTheJobsExitCode) {
  const auto dir = scratch("exit3");
  const auto result = run_command({"sbatch", "--wait", "-o", (dir / "job.out").string(), "--wrap", "exit 3"});
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
}

TEST(Cluster, ImpossibleRequestIsRefusedNotQueued) {
  const auto result = run_command({"sbatch", "--gpus=a100:8", "--wrap", "true"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("not available"), std::string::npos) << result.err;
}

TEST(Cluster, SrunHelpListsThePluginsOptions) {
  const auto result = run_command({"srun", "--help"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char* option : {"--mgpr", "--mgpr-timeout", "--mgpr-stall", "--mgpr-bind", "--mgpr-port"}) {
    EXPECT_NE(result.out.find(option), std::string::npos) << option << " missing from:\n" << result.out;
  }
}

TEST(Cluster, SbatchHelpListsThePluginsOptions) {
  const auto result = run_command({"sbatch", "--help"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("--mgpr"), std::string::npos) << result.out;
}

TEST(Cluster, SrunAcceptsMgprOnAStep) {
  const auto result = run_command({"srun", "--mgpr", "--mgpr-bind=none", "-n1", "true"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST(Cluster, SrunRejectsABadPluginOptionValueByName) {
  const auto result = run_command({"srun", "--mgpr-bind=gpus", "-n1", "true"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("mgpr"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("'gpus' is not gpu or none"), std::string::npos) << result.err;
}

}  // namespace
