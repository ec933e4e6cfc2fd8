// on_rank_loss=continue under Slurm: what mgpr-submit's job script asks of Slurm and how
// it decides the job's status, and the plugin's watchdog leaving a step running when a
// rank other than rank 0 dies.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::read_file;
using mgpr::test::scratch;
using mgpr::test::timed_srun;
namespace fs = std::filesystem;

TEST(RankLoss, UnderContinueTheScriptKeepsTheJobAndTheStepGoing) {
  const auto result = run_command(
      {MGPR_SUBMIT, "--dry-run", "--nodes", "2", "--gpus", "a100:2", "use_fake_data=true", "on_rank_loss=continue"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "\n#SBATCH --no-kill\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "'--mgpr-on-rank-loss=continue' '--kill-on-bad-exit=0' ")) << result.out;
  EXPECT_TRUE(contains(result.out, "on_rank_loss = 'continue'")) << result.out;
  EXPECT_TRUE(contains(result.out, "rank_zero_exit=\"$job_dir/rank-zero-exit.log\"")) << result.out;

  // fail, the default: no --no-kill, and the step's value given all the same, over any
  // site default the job's config (which names every key) would contradict.
  const auto failing = run_command({MGPR_SUBMIT, "--dry-run", "use_fake_data=true"});
  ASSERT_EQ(failing.exit_code, 0) << failing.err;
  EXPECT_FALSE(contains(failing.out, "--no-kill")) << failing.out;
  EXPECT_FALSE(contains(failing.out, "--kill-on-bad-exit")) << failing.out;
  EXPECT_TRUE(contains(failing.out, "'--mgpr-on-rank-loss=fail' ")) << failing.out;
}

// The rendered script run with srun and scontrol stood in for: srun exits as it would
// after a lost rank, having left what the plugin writes.
struct ScriptRun {
  mgpr::CommandResult result;
  std::string scontrol_calls;
};

ScriptRun run_script_after(const std::string& name, int srun_status, const std::string& rank_zero_line,
                           const std::string& endings_line) {
  const auto dir = scratch("rank-loss-script-" + name);
  const auto rendered = run_command(
      {MGPR_SUBMIT, "--dry-run", "--log-dir", (dir / "logs").string(), "use_fake_data=true", "on_rank_loss=continue"});
  EXPECT_EQ(rendered.exit_code, 0) << rendered.err;
  { std::ofstream(dir / "job.sbatch") << rendered.out; }
  fs::create_directories(dir / "bin");
  const auto stub = [&](const std::string& program, const std::string& body) {
    std::ofstream(dir / "bin" / program) << "#!/bin/bash\n" << body;
    fs::permissions(dir / "bin" / program, fs::perms::owner_all);
  };
  stub("srun", "[ -z '" + rank_zero_line + "' ] || echo '" + rank_zero_line + "' > \"$MGPR_LOG_DIR/" +
                   mgpr::kRankZeroExitFile + "\"\n[ -z '" + endings_line + "' ] || echo '" + endings_line +
                   "' > \"$MGPR_LOG_DIR/" + mgpr::kStepEndingsFile + "\"\nexit " + std::to_string(srun_status) + "\n");
  stub("scontrol", "echo \"$*\" >> \"" + (dir / "scontrol.calls").string() + "\"\n");
  auto result = run_command({"env", "PATH=" + (dir / "bin").string() + ":/usr/bin:/bin", "SLURM_JOB_ID=77",
                             "SLURM_RESTART_COUNT=0", "bash", (dir / "job.sbatch").string()});
  return {std::move(result), read_file(dir / "scontrol.calls")};
}

TEST(RankLoss, UnderContinueRankZerosStatusIsTheJobsWhenTheStepWentOn) {
  // Rank 1 killed, the run complete: srun 137, rank 0 0.
  const auto complete = run_script_after("complete", 137, "0 0 node1", "");
  EXPECT_EQ(complete.result.exit_code, 0) << complete.result.err;
  EXPECT_TRUE(contains(complete.result.err,
                       "mgpr: srun exited with 137 as the run lost a rank (diagnoses.log names "
                       "it); rank 0 exited with 0, the run's status"))
      << complete.result.err;
  EXPECT_EQ(complete.scontrol_calls, "");
  // Rank 0 failed (a raster it could not read): the job fails with its code, not srun's.
  EXPECT_EQ(run_script_after("failed", 137, "0 1 node1", "").result.exit_code, 1);
  // Rank 0 stopped before walltime: requeued as ever.
  const auto stopped = run_script_after("stopped", 137, "0 3 node1", "");
  EXPECT_EQ(stopped.result.exit_code, 3);
  EXPECT_EQ(stopped.scontrol_calls, "requeue 77\n");
}

TEST(RankLoss, UnderContinueAStepTheWatchdogEndedKeepsSrunsStatusAndItsEnding) {
  // Rank 0 killed: the watchdog ended the step and said why; the script acts on that.
  const auto killed = run_script_after("rank-zero-killed", 137, "0 137 node1", "0 killed 0 node1");
  EXPECT_EQ(killed.result.exit_code, 137) << killed.result.err;
  EXPECT_EQ(killed.scontrol_calls, "requeue 77\n");
  EXPECT_TRUE(contains(killed.result.err, "requeueing job 77: a rank was killed from outside the job"))
      << killed.result.err;
  // No record from the plugin (a step refused before it ran): srun's status stands.
  EXPECT_EQ(run_script_after("no-record", 2, "", "").result.exit_code, 2);
}

// Two ranks on two GPUs running `script` with bash, plus `options`.
std::vector<std::string> two_ranks(std::vector<std::string> options, const std::string& script) {
  options.insert(options.end(), {"-n2", "--gpus=a100:2", "--kill-on-bad-exit=0", "bash", "-c", script});
  return options;
}

TEST(RankLoss, UnderContinueTheWatchdogNamesALostRankAndLeavesTheStepRunning) {
  const auto logs = scratch("rank-loss-continue");
  const auto run =
      timed_srun(logs, two_ranks({"--mgpr", "--mgpr-on-rank-loss=continue"},
                                 "echo \"$RANK $MGPR_ON_RANK_LOSS\"; if [ $RANK = 1 ]; then sleep 1; kill -9 $$; fi; "
                                 "sleep 4; echo rank 0 finished"));
  EXPECT_EQ(run.result.exit_code, 137) << run.result.err;  // srun's: a task was killed
  EXPECT_TRUE(contains(run.result.out, "0 continue")) << run.result.out;
  EXPECT_TRUE(contains(run.result.out, "rank 0 finished")) << "the step was ended\n" << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "rank 1 of step")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "was killed by signal 9 (SIGKILL, Killed) while Slurm was not ending the job"))
      << run.result.err;
  EXPECT_TRUE(
      contains(run.result.err, "not ending the step (--mgpr-on-rank-loss=continue): the run goes on without it"))
      << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "the run goes on without it"))
      << read_file(logs / "diagnoses.log");
  EXPECT_FALSE(fs::exists(logs / mgpr::kStepEndingsFile)) << read_file(logs / mgpr::kStepEndingsFile);
  EXPECT_TRUE(contains(read_file(logs / mgpr::kRankZeroExitFile), " 0 ")) << read_file(logs / mgpr::kRankZeroExitFile);
}

TEST(RankLoss, UnderContinueLosingRankZeroStillEndsTheStep) {
  const auto logs = scratch("rank-loss-rank-zero");
  const auto run = timed_srun(logs, two_ranks({"--mgpr", "--mgpr-on-rank-loss=continue"},
                                              "if [ $RANK = 0 ]; then sleep 1; exit 1; fi; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 10.0);
  EXPECT_TRUE(contains(run.result.err, "rank 0 of step")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "ending the step so its peers do not wait for it")) << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / mgpr::kStepEndingsFile), " failed 0 "))
      << read_file(logs / mgpr::kStepEndingsFile);
}

// The runtime is told the step's value, and a config saying the other is refused by name.
TEST(RankLoss, TheRuntimeRefusesAConfigThatContradictsTheStep) {
  const auto logs = scratch("rank-loss-contradiction");
  const auto runtime = fs::path(MGPR_SUBMIT).parent_path() / "mgpr";  // built beside mgpr-submit
  const auto run = timed_srun(
      logs, {"--mgpr", "--mgpr-bind=none", "-n1", runtime.string(), "use_fake_data=true", "on_rank_loss=continue"});
  EXPECT_EQ(run.result.exit_code, 2) << run.result.err;
  EXPECT_TRUE(contains(run.result.err,
                       "the config sets on_rank_loss=continue but the step was started with "
                       "MGPR_ON_RANK_LOSS=fail"))
      << run.result.err;
}

}  // namespace
