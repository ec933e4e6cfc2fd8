// The plugin's watchdog on the real local cluster: steps whose ranks do not all reach
// rendezvous, stop progressing, or fail early are ended with a diagnosis.
#include <gtest/gtest.h>

#include <chrono>

#include "slurm/test_support.hpp"

namespace {

using mgpr::test::contains;
using mgpr::test::read_file;
using mgpr::test::scratch;
using mgpr::test::timed_srun;
namespace fs = std::filesystem;

// Two ranks on two GPUs running `script` with bash, plus `options`.
std::vector<std::string> two_ranks(std::vector<std::string> options, const std::string& script) {
  options.insert(options.end(), {"-n2", "--gpus=a100:2", "bash", "-c", script});
  return options;
}

TEST(Watchdog, ARankThatNeverArrivesEndsTheStepWithinTimeoutPlusTen) {
  const auto logs = scratch("watchdog-deadlock");
  const auto run = timed_srun(
      logs, two_ranks({"--mgpr", "--mgpr-timeout=5"}, "[ $RANK = 1 ] || touch \"$MGPR_PROGRESS_FILE\"; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 15.0);
  EXPECT_TRUE(contains(run.result.err, "mgpr: deadlock:")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "rank 1 did not reach rendezvous within 5 s; arrived: 0 (1 of 2)"))
      << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "rank 1 did not reach rendezvous"));
}

TEST(Watchdog, AnExplicitTimeoutCatchesAProgramThatNeverReports) {
  const auto logs = scratch("watchdog-never");
  const auto run = timed_srun(logs, two_ranks({"--mgpr", "--mgpr-timeout=3"}, "sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 13.0);
  EXPECT_TRUE(contains(run.result.err, "ranks 0,1 did not reach rendezvous within 3 s; arrived: none (0 of 2)"))
      << run.result.err;
}

TEST(Watchdog, ARankThatFailsEarlyEndsItsPeersPromptly) {
  const auto logs = scratch("watchdog-early-exit");
  const auto run = timed_srun(logs, two_ranks({"--mgpr"}, "if [ $RANK = 1 ]; then exit 1; fi; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 10.0);
  EXPECT_TRUE(contains(run.result.err, "rank 1 of step")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "exited with code 1")) << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "exited with code 1"));
}

// SIGKILL is what the OOM killer, a cgroup's limit and a node's health check send: it is
// a rank's death like any other, named with its signal, and recorded for the job script.
TEST(Watchdog, ARankKilledBySigkillEndsItsPeersPromptly) {
  const auto logs = scratch("watchdog-sigkill-rank");
  const auto run = timed_srun(logs, two_ranks({"--mgpr"}, "if [ $RANK = 1 ]; then sleep 1; kill -9 $$; fi; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 10.0);
  EXPECT_TRUE(contains(run.result.err, "rank 1 of step")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "was killed by signal 9 (SIGKILL, Killed) while Slurm was not ending the job"))
      << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "was killed by signal 9"));
  EXPECT_TRUE(contains(read_file(logs / "endings.log"), " killed 1 ")) << read_file(logs / "endings.log");
}

// scancel of the step is the job's own end: Slurm says so, and no rank is blamed.
TEST(Watchdog, AStepCancelledWithScancelBlamesNoRank) {
  const auto logs = scratch("watchdog-scancel");
  const auto run = timed_srun(
      logs, two_ranks({"--mgpr"}, "[ $RANK = 0 ] && sleep 1 && scancel \"$SLURM_JOB_ID.$SLURM_STEP_ID\"; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 20.0);
  EXPECT_FALSE(contains(run.result.err, "was killed by signal")) << run.result.err;
  EXPECT_FALSE(fs::exists(logs / "endings.log")) << read_file(logs / "endings.log");
}

// 3 is a clean stop (SIGUSR2 before walltime), never a failure: the peer still
// finishing its batch is left to finish, no diagnosis is written, and the step ends 3.
TEST(Watchdog, ARankThatStoppedCleanlyLeavesItsPeersToFinish) {
  const auto logs = scratch("watchdog-clean-stop");
  const auto run = timed_srun(logs, two_ranks({"--mgpr"}, "if [ $RANK = 1 ]; then exit 3; fi; sleep 4"));
  EXPECT_EQ(run.result.exit_code, 3) << run.result.err;
  EXPECT_GE(run.seconds, 4.0) << "the peer was ended";
  EXPECT_FALSE(contains(run.result.err, "exited with code 3")) << run.result.err;
  EXPECT_FALSE(contains(read_file(logs / "diagnoses.log"), "exited with code 3"));
}

TEST(Watchdog, AStalledStepIsEnded) {
  const auto logs = scratch("watchdog-stall");
  const auto run =
      timed_srun(logs, two_ranks({"--mgpr", "--mgpr-stall=3"}, "touch \"$MGPR_PROGRESS_FILE\"; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 13.0);
  EXPECT_TRUE(contains(run.result.err, "mgpr: stall:")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "made no progress")) << run.result.err;
}

// A rank that has done its share waits for a slower peer at the
// final gather without touching its file; it says so ("finished") and is not stalled.
TEST(Watchdog, ARankWaitingForASlowerPeerIsNotStalled) {
  const auto logs = scratch("watchdog-finished-waits");
  const auto run =
      timed_srun(logs, two_ranks({"--mgpr", "--mgpr-stall=3"},
                                 "touch \"$MGPR_PROGRESS_FILE\"; if [ $RANK = 0 ]; then printf 'finished\\n' "
                                 "> \"$MGPR_PROGRESS_FILE\"; sleep 7; else for i in 1 2 3 4 5 6 7; do "
                                 "touch \"$MGPR_PROGRESS_FILE\"; sleep 1; done; fi"));
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_FALSE(contains(run.result.err, "stall:")) << run.result.err;
}

TEST(Watchdog, ARankIgnoringSigtermIsKilled) {
  const auto logs = scratch("watchdog-sigkill");
  const auto run = timed_srun(logs, two_ranks({"--mgpr", "--mgpr-timeout=2"}, "trap '' TERM; sleep 600"));
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 20.0);
}

TEST(Watchdog, AReportingStepRunsToTheEndAndLeavesNoProgressFiles) {
  const auto logs = scratch("watchdog-healthy");
  const auto run = timed_srun(logs, two_ranks({"--mgpr", "--mgpr-timeout=5", "--mgpr-stall=3"},
                                              "for i in 1 2 3 4 5; do touch \"$MGPR_PROGRESS_FILE\"; sleep 1; done"));
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_FALSE(fs::exists(logs / "diagnoses.log")) << read_file(logs / "diagnoses.log");
  // The plugin tidies at slurm_spank_exit in slurmstepd, which may end after srun returned.
  EXPECT_TRUE(mgpr::test::eventually(10, [&] { return !fs::exists(logs / "progress"); }))
      << "the progress folder is tidied";
}

TEST(Watchdog, AnUnwritableLogFolderCostsTheStepNothing) {
  const auto run = timed_srun("/proc/mgpr-no-such-folder",
                              two_ranks({"--mgpr"}, "echo \"rank $RANK ${MGPR_PROGRESS_FILE-no-progress-file}\""));
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_TRUE(contains(run.result.out, "rank 1 no-progress-file")) << run.result.out;
  EXPECT_TRUE(contains(run.result.err, "mgpr: no rendezvous/stall watch for step")) << run.result.err;
}

}  // namespace
