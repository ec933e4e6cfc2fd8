// mgpr-submit and mgpr-logs against the real local cluster.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "mgpr/summary.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
namespace fs = std::filesystem;

using mgpr::test::contains;
using mgpr::test::scratch;

TEST(Submit, DryRunOneNodeTwoA100) {
  const auto result = run_command({MGPR_SUBMIT, "--dry-run", "--gpus", "a100:2", "use_fake_data=true"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "#SBATCH --nodes=1\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --ntasks-per-node=2\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --gpus-per-node=a100:2\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --cpus-per-task=4\n")) << result.out;  // 2 workers x 2 CPUs
  EXPECT_TRUE(contains(result.out, "srun --mgpr=")) << result.out;
}

// One --sbatch-arg takes one value: the keys and rasters after it stay keys and rasters
// (CLI11 let the option swallow every argument after it, as #SBATCH lines).
TEST(Submit, AnSbatchArgTakesOneValueAndLeavesTheRest) {
  const auto result = run_command({MGPR_SUBMIT, "--dry-run", "--sbatch-arg=--reservation=lab", "use_fake_data=true",
                                   "tile_size=512", "--sbatch-arg", "--comment=x"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "#SBATCH --reservation=lab\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "#SBATCH --comment=x\n")) << result.out;
  EXPECT_FALSE(contains(result.out, "#SBATCH use_fake_data")) << result.out;
  EXPECT_FALSE(contains(result.out, "#SBATCH tile_size")) << result.out;
  EXPECT_TRUE(contains(result.out, "tile_size = 512")) << result.out;
}

TEST(Submit, ACpuCountOfZeroIsRefusedNotReplaced) {
  const auto result = run_command({MGPR_SUBMIT, "--dry-run", "--cpus-per-task", "0", "use_fake_data=true"});
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_TRUE(contains(result.err, "--cpus-per-task")) << result.err;
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
  // Options CLI11 refuses exit 2 too, not CLI11's own codes (105, 109).
  for (const auto& bad : {std::vector<std::string>{MGPR_SUBMIT, "--dry-run", "--gpu", "2", "use_fake_data=true"},
                          std::vector<std::string>{MGPR_SUBMIT, "--dry-run", "--nodes", "0", "use_fake_data=true"},
                          std::vector<std::string>{MGPR_LOGS, "--bogus"}, std::vector<std::string>{MGPR_LOGS, "12x"}}) {
    const auto result = run_command(bad);
    EXPECT_EQ(result.exit_code, 2) << bad[1] << ": " << result.err;
    EXPECT_FALSE(result.err.empty()) << bad[1];
  }
}

TEST(Submit, BadInputIsRefusedBeforeSbatch) {
  const auto logs = scratch("refused-early") / "logs";
  for (const auto& bad : {std::vector<std::string>{"--gpus", "0", "use_fake_data=true"},
                          std::vector<std::string>{"use_fake_data=true", "batch_sise=4"}}) {
    std::vector<std::string> argv{MGPR_SUBMIT, "--log-dir", logs.string()};
    argv.insert(argv.end(), bad.begin(), bad.end());
    const auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_TRUE(contains(result.err, "mgpr-submit: error: ")) << result.err;
  }
  EXPECT_FALSE(fs::exists(logs)) << "mgpr-submit got as far as the log folder";
}

TEST(Submit, ACustomTemplateWithAnUnknownPlaceholderIsRefused) {
  const auto dir = scratch("custom-template");
  { std::ofstream(dir / "site.sbatch") << "#!/bin/bash\n#SBATCH --nodes={{nodez}}\n"; }
  const auto result =
      run_command({MGPR_SUBMIT, "--dry-run", "--template", (dir / "site.sbatch").string(), "use_fake_data=true"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "site.sbatch' line 2: unknown placeholder {{nodez}}")) << result.err;
}

TEST(Submit, MoreGpusThanExistIsRefusedWithAHint) {
  const auto logs = scratch("refused");
  // The local node has 4 A100s, 8 CPUs and 32G: 8 GPUs are refused for the GPUs and
  // their memory, 4 ranks of 4 CPUs for the CPUs. Either way the hint says what was asked.
  const auto gpus = run_command(
      {MGPR_SUBMIT, "--gpus", "a100:8", "--cpus-per-task", "1", "--log-dir", logs.string(), "use_fake_data=true"});
  EXPECT_EQ(gpus.exit_code, 1);
  EXPECT_TRUE(contains(gpus.err, "sbatch refused the job")) << gpus.err;
  EXPECT_TRUE(contains(gpus.err, "Requested node configuration is not available")) << gpus.err;
  EXPECT_TRUE(contains(gpus.err,
                       "hint: no node or partition offers what the job asks (1 node(s) x 8 GPU(s) of "
                       "type a100 x 1 CPUs per rank, 64G memory per node); lower --gpus"))
      << gpus.err;
  const auto cpus = run_command(
      {MGPR_SUBMIT, "--gpus", "4", "--cpus-per-task", "4", "--log-dir", logs.string(), "use_fake_data=true"});
  EXPECT_EQ(cpus.exit_code, 1);
  EXPECT_TRUE(contains(cpus.err, "More processors requested than permitted")) << cpus.err;
  EXPECT_TRUE(contains(cpus.err, "(1 node(s) x 4 GPU(s) x 4 CPUs per rank")) << cpus.err;
  EXPECT_TRUE(fs::is_empty(logs)) << "a refused job leaves no script or folder behind";
}

TEST(Submit, WaitRunsTheJobAndEveryRankReports) {
  const auto logs = scratch("fake-run");
  const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:2", "--wait", "--log-dir", logs.string(),
                                   "use_fake_data=true", "dummy_dataset_count=9", "tile_size=64", "sharding=dynamic",
                                   "output_dir=" + (logs / "out").string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string job_id = mgpr::test::job_id_of(result);
  const mgpr::JobLogLayout layout{logs, job_id};
  EXPECT_TRUE(fs::exists(layout.batch_script()));
  EXPECT_TRUE(fs::exists(layout.resolved_config()));
  EXPECT_EQ(mgpr::list_rank_summaries(layout).size(), 2U);
  EXPECT_TRUE(contains(result.out, "COMPLETED")) << result.out;

  // Both ranks under srun --mgpr shared the 9 tiles: each tile once, none missing.
  // Each rank's memory is its whole life's: rank 0's writing after the loop included, so
  // on CPU the peak is the process's resident peak, which a live process never has at 0.
  std::int64_t tiles_by_ranks = 0;
  for (const auto& file : mgpr::list_rank_summaries(layout)) {
    const auto summary = mgpr::rank_summary_from_json(mgpr::read_text_file(file), file.string());
    tiles_by_ranks += summary.tiles;
    EXPECT_GT(summary.host_peak_bytes, 0) << file;
    EXPECT_EQ(summary.memory_peak_bytes, summary.host_peak_bytes) << file;
  }
  EXPECT_EQ(tiles_by_ranks, 9);
  std::set<std::string> tile_rows;
  std::istringstream rows(mgpr::read_text_file(logs / "out" / "fake_tiles.csv"));
  std::string row;
  std::getline(rows, row);  // header
  while (std::getline(rows, row)) {
    const auto id = row.substr(0, row.find(',', row.find(',', row.find(',', row.find(',') + 1) + 1) + 1));
    EXPECT_TRUE(tile_rows.insert(id).second) << "tile listed twice: " << row;
  }
  EXPECT_EQ(tile_rows.size(), 9U);

  const auto table = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "total: 2 rank(s)")) << table.out;
  EXPECT_TRUE(contains(table.out, " RSS ")) << table.out;
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
