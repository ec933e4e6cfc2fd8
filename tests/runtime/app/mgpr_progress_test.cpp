// What people watch while `mgpr gpus=2` runs: on a terminal (a pseudo-terminal from
// util-linux's `script`) one live line for the whole run, drawn by rank 0 while the
// other rank keeps quiet; into a file, the periodic lines, rank 0's with the run's ETA.
#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

std::vector<std::string> slow_fake_run(const fs::path& out) {
  // 40 tiles that take 30 ms each to "read": long enough for several redraws.
  return {"use_fake_data=true",
          "dummy_dataset_count=40",
          "dummy_dataset_delay=0.03",
          "tile_size=64",
          "batch_size=2",
          "workers=1",
          "gpus=2",
          "accelerator=cpu",
          "output_dir=" + out.string()};
}

TEST_F(MgprCli, OnATerminalRankZeroDrawsOneLiveLineForTheWholeRun) {
  std::string command = MGPR_BINARY;
  for (const auto& argument : slow_fake_run(path("live-out"))) command += " " + argument;
  command += " model=" + path("mean.pt").string();
  // `script` runs the command on a pseudo-terminal and copies what it shows to stdout.
  const auto result = run_command({"script", "-qec", command, "/dev/null"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto& shown = result.out;
  EXPECT_TRUE(contains(shown, "\rmgpr: ")) << shown;
  EXPECT_TRUE(contains(shown, " tiles/s  ETA ")) << shown;
  EXPECT_TRUE(contains(shown, "\x1b[K")) << "a shorter line must clear what a longer one left";
  // The last state comes after both ranks finished: every tile of the run.
  EXPECT_TRUE(contains(shown, "mgpr: 40/40 tiles 100%")) << shown;
  // The periodic lines would break the live line: neither rank prints them here.
  EXPECT_FALSE(contains(shown, ": batch ")) << shown;
  EXPECT_TRUE(contains(shown, "rank 1: done, ")) << shown;
}

TEST_F(MgprCli, IntoALogFileTheRanksKeepTheirPeriodicLines) {
  auto arguments = slow_fake_run(path("log-out"));
  arguments.insert(arguments.end(), {"log_interval=2", "model=" + path("mean.pt").string()});
  const auto result = mgpr(arguments);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_FALSE(contains(result.out + result.err, "\r")) << "no live line in a file";
  EXPECT_TRUE(contains(result.out, "rank 0: batch 2, 4 tiles")) << result.out;
  EXPECT_TRUE(contains(result.out, "rank 1: batch 2, 4 tiles")) << result.out;
  EXPECT_TRUE(contains(result.out, "; all ranks: ")) << result.out;
  EXPECT_TRUE(contains(result.out, "/40 tiles")) << result.out;
  EXPECT_TRUE(contains(result.out, "ETA ")) << result.out;
}

}  // namespace
