// mgpr-submit and mgpr-logs against the real local cluster.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mgpr/log_layout.hpp"
#include "run_command.hpp"
#include "test_support.hpp"

namespace {

using mgpr::launcher::run_command;
namespace fs = std::filesystem;

using mgpr::test::scratch;
using mgpr::test::contains;

TEST(Submit, DryRunOneNodeTwoA100) {
  const auto result = run_command({MGPR_SUBMIT, "--dry-run", "--gpus", "a100:2", "use_fake_data=true"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "#SBATCH --nodes=1\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --ntasks-per-node=2\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --gpus-per-node=a100:2\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --cpus-per-task=4\n")) << result.out;  // 2 workers x 2 CPUs
  EXPECT_TRUE(contains(result.out, "srun --mgpr=")) << result.out;
}

TEST(Submit, DryRunTwoNodesFourGpus) {
  const auto result =
      run_command({MGPR_SUBMIT, "--dry-run", "--gpus", "4", "--nodes", "2", "use_fake_data=true", "workers=3"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "#SBATCH --nodes=2\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --ntasks-per-node=4\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --gpus-per-node=4\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --cpus-per-task=6\n")) << result.out;
}

TEST(Submit, UsageErrorsExitTwoAndNameTheInput) {
  const auto bad_key = run_command({MGPR_SUBMIT, "--dry-run", "use_fake_data=true", "tile_sise=3"});
  EXPECT_EQ(bad_key.exit_code, 2);
  EXPECT_TRUE(contains(bad_key.err, "did you mean tile_size")) << bad_key.err;
  const auto bad_gpus = run_command({MGPR_SUBMIT, "--dry-run", "--gpus", "a100:x", "use_fake_data=true"});
  EXPECT_EQ(bad_gpus.exit_code, 2);
  EXPECT_TRUE(contains(bad_gpus.err, "invalid GPU spec 'a100:x'")) << bad_gpus.err;
  const auto missing = run_command({MGPR_SUBMIT, "--dry-run", "/nonexistent/ortho.tif"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "raster '/nonexistent/ortho.tif' does not exist")) << missing.err;
}

TEST(Submit, SbatchRefusalIsShownWithAHint) {
  const auto logs = scratch("refused");
  const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:8", "--log-dir", logs.string(), "use_fake_data=true"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.err, "sbatch refused the job")) << result.err;
  EXPECT_TRUE(contains(result.err, "hint:")) << result.err;
}

TEST(Submit, WaitRunsTheJobAndEveryRankReports) {
  const auto logs = scratch("fake-run");
  const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:2", "--wait", "--log-dir", logs.string(),
                                   "use_fake_data=true", "dummy_dataset_count=8", "output_dir=" + (logs / "out").string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string job_id = result.out.substr(0, result.out.find('\n'));
  const mgpr::JobLogLayout layout{logs, job_id};
  EXPECT_TRUE(fs::exists(layout.batch_script()));
  EXPECT_TRUE(fs::exists(layout.resolved_config()));
  EXPECT_EQ(mgpr::list_rank_summaries(layout).size(), 2U);
  EXPECT_TRUE(contains(result.out, "COMPLETED")) << result.out;

  const auto table = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "total: 2 rank(s)")) << table.out;
}

TEST(Submit, WaitReturnsAFailedJobsExitCode) {
  const auto logs = scratch("failing-run");
  // The file exists, so mgpr-submit accepts it; GDAL inside the job cannot open it and
  // the runtime exits 2: that code must come back through srun, the script and --wait.
  const auto raster = logs / "not-a-raster.tif";
  { std::ofstream(raster) << "plain text"; }
  const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:1", "--wait", "--log-dir", logs.string(),
                                   raster.string(), "output_dir=" + (logs / "out").string()});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_TRUE(contains(result.out, "FAILED")) << result.out;
}

}  // namespace
