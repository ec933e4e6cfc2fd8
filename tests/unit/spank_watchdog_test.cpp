// The watchdog's rules: when a step is ended for a missing, stalled or failed rank, and
// what the one-line diagnosis says.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>

#include "mgpr/log_layout.hpp"
#include "progress_folder.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"
#include "unit/job_users.hpp"
#include "watchdog_rules.hpp"

namespace {

using namespace mgpr::spank;
using mgpr::progress_dir;
using mgpr::progress_file;
using mgpr::rank_of_progress_file;

using mgpr::test::contains;

// Two ranks on this node, 30 s rendezvous timeout, 60 s into the step.
WatchFacts two_ranks(bool rank0_arrived, bool rank1_arrived) {
  WatchFacts facts;
  facts.job_id = 9;
  facts.step_id = 1;
  facts.host = "gpu01";
  facts.world_size = 2;
  facts.elapsed_s = 60;
  facts.rendezvous_timeout_s = 30;
  facts.local = {{.rank = 0, .arrived = rank0_arrived}, {.rank = 1, .arrived = rank1_arrived}};
  return facts;
}

int exited_with(int code) { return code << 8; }  // a wait() status
int killed_by(int signal) { return signal; }

TEST(SpankWatchdog, ProgressFilesAreNamedByRank) {
  EXPECT_EQ(progress_dir("/logs/42", 3), std::filesystem::path("/logs/42/progress/3"));
  EXPECT_EQ(progress_file("/logs/42/progress/3", 7), std::filesystem::path("/logs/42/progress/3/rank-00007"));
  EXPECT_EQ(rank_of_progress_file("rank-00007"), 7);
  EXPECT_EQ(rank_of_progress_file("rank-123456"), 123456);
  EXPECT_EQ(rank_of_progress_file("rank-"), std::nullopt);
  EXPECT_EQ(rank_of_progress_file("rank-7.tmp"), std::nullopt);
  EXPECT_EQ(rank_of_progress_file("notes.txt"), std::nullopt);
}

TEST(SpankWatchdog, AMissingRankEndsTheStepOnceArmedByAnArrival) {
  const auto verdict = judge(two_ranks(true, false));
  ASSERT_TRUE(verdict.end_step);
  EXPECT_TRUE(contains(verdict.message, "deadlock: step 9.1 on gpu01: rank 1 did not reach rendezvous within 30 s"))
      << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "arrived: 0 (1 of 2)")) << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "Likely cause:")) << verdict.message;
}

TEST(SpankWatchdog, NotBeforeTheTimeout) {
  auto facts = two_ranks(true, false);
  facts.elapsed_s = 29;
  EXPECT_FALSE(judge(facts).end_step);
}

TEST(SpankWatchdog, AProgramThatNeverReportsIsLeftAloneUnlessTheTimeoutWasGiven) {
  auto facts = two_ranks(false, false);
  EXPECT_FALSE(judge(facts).end_step) << "the plugstack default must not end programs that do not report";
  facts.armed_from_start = true;
  const auto verdict = judge(facts);
  ASSERT_TRUE(verdict.end_step);
  EXPECT_TRUE(contains(verdict.message, "ranks 0,1 did not reach rendezvous")) << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "arrived: none (0 of 2)")) << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "never reaches rendezvous")) << verdict.message;
}

TEST(SpankWatchdog, AnArrivalOnAnotherNodeArmsThisOne) {
  auto facts = two_ranks(false, false);
  facts.world_size = 4;
  facts.local = {{.rank = 2}, {.rank = 3, .arrived = true}};
  facts.arrived_elsewhere = {1, 0};
  const auto verdict = judge(facts);
  ASSERT_TRUE(verdict.end_step);
  EXPECT_TRUE(contains(verdict.message, "rank 2 did not reach")) << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "arrived: 0,1,3 (3 of 4)")) << verdict.message;
}

TEST(SpankWatchdog, ExitedRanksAreNotMissing) {
  auto facts = two_ranks(true, false);
  facts.local[1].exited = true;
  EXPECT_FALSE(judge(facts).end_step);
}

TEST(SpankWatchdog, ZeroTimeoutChecksNothing) {
  auto facts = two_ranks(true, false);
  facts.rendezvous_timeout_s = 0;
  EXPECT_FALSE(judge(facts).end_step);
}

TEST(SpankWatchdog, StallAfterRendezvous) {
  auto facts = two_ranks(true, true);
  facts.stall_timeout_s = 120;
  facts.local[0].seconds_since_report = 5;
  facts.local[1].seconds_since_report = 130;
  const auto verdict = judge(facts);
  ASSERT_TRUE(verdict.end_step);
  EXPECT_TRUE(contains(verdict.message, "stall: step 9.1 on gpu01: rank 1 made no progress for 130 s"))
      << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "--mgpr-stall=120")) << verdict.message;
  facts.local[1].seconds_since_report = 100;
  EXPECT_FALSE(judge(facts).end_step);
}

// A rank waiting at the final gather for a slower peer is not stalled; the
// peer that stops reporting still is.
TEST(SpankWatchdog, AFinishedRankWaitingForItsPeersIsNotStalled) {
  auto facts = two_ranks(true, true);
  facts.stall_timeout_s = 10;
  facts.local[0].seconds_since_report = 500;
  facts.local[0].finished = true;
  facts.local[1].seconds_since_report = 1;
  EXPECT_FALSE(judge(facts).end_step);
  facts.local[1].seconds_since_report = 11;
  const auto verdict = judge(facts);
  ASSERT_TRUE(verdict.end_step);
  EXPECT_TRUE(contains(verdict.message, "rank 1 made no progress")) << verdict.message;
}

TEST(SpankWatchdog, NoStallBeforeEveryLocalRankArrived) {
  auto facts = two_ranks(true, false);
  facts.rendezvous_timeout_s = 0;
  facts.stall_timeout_s = 10;
  facts.local[0].seconds_since_report = 500;
  EXPECT_FALSE(judge(facts).end_step);
}

ExitFacts rank3_ended(int wait_status) {
  ExitFacts facts;
  facts.job_id = 9;
  facts.step_id = 1;
  facts.host = "gpu01";
  facts.rank = 3;
  facts.wait_status = wait_status;
  return facts;
}

TEST(SpankWatchdog, WhichExitsEndTheStep) {
  EXPECT_FALSE(judge_exit(rank3_ended(exited_with(0))).end_step);
  EXPECT_TRUE(judge_exit(rank3_ended(exited_with(1))).end_step);
  // 3 is the clean stop before walltime; ending the step killed the peers
  // still finishing their batch, and the job did not requeue.
  EXPECT_FALSE(judge_exit(rank3_ended(exited_with(3))).end_step);
  EXPECT_EQ(judge_exit(rank3_ended(exited_with(2))).ending, mgpr::RankEnding::kUsageError);
  EXPECT_EQ(judge_exit(rank3_ended(killed_by(SIGSEGV))).ending, mgpr::RankEnding::kCrashed);
  EXPECT_TRUE(judge_exit(rank3_ended(killed_by(SIGABRT))).end_step);
  // A step told to stop: scancel --signal, Ctrl-C on srun, the watchdog on another node.
  EXPECT_FALSE(judge_exit(rank3_ended(killed_by(SIGTERM))).end_step);
  EXPECT_FALSE(judge_exit(rank3_ended(killed_by(SIGINT))).end_step);
  EXPECT_FALSE(judge_exit(rank3_ended(killed_by(SIGHUP))).end_step);
  // The warning before walltime, come before the rank had its handler: its peers got it
  // too; ending the step kept the job from being requeued.
  EXPECT_FALSE(judge_exit(rank3_ended(killed_by(SIGUSR2))).end_step);
}

// SIGKILL is what the OOM killer, a cgroup's limit and a health check send: a rank's
// death, unless Slurm is ending the job or step, or the step was told to stop first.
TEST(SpankWatchdog, ASigkillEndsTheStepUnlessSlurmOrAStopSentIt) {
  auto facts = rank3_ended(killed_by(SIGKILL));
  const auto killed = judge_exit(facts);
  ASSERT_TRUE(killed.end_step);
  EXPECT_EQ(killed.ending, mgpr::RankEnding::kKilled);
  EXPECT_TRUE(contains(killed.message, "rank 3 of step 9.1 on gpu01 was killed by signal 9 (SIGKILL, Killed)"))
      << killed.message;
  facts.slurm_ends_step = true;
  EXPECT_FALSE(judge_exit(facts).end_step) << "scancel, the walltime or a node failure: Slurm reports it";
  facts.slurm_ends_step = false;
  facts.step_told_to_stop = true;
  EXPECT_FALSE(judge_exit(facts).end_step) << "the SIGKILL after a SIGTERM the rank ignored";
  facts.step_told_to_stop = false;
  facts.step_killed_whole = true;
  EXPECT_FALSE(judge_exit(facts).end_step) << "every rank of the node killed at once: scancel of the step";
}

TEST(SpankWatchdog, AKillTheStepsMemoryCgroupCountedIsOutOfMemory) {
  auto facts = rank3_ended(killed_by(SIGKILL));
  facts.out_of_memory = true;
  const auto verdict = judge_exit(facts);
  ASSERT_TRUE(verdict.end_step);
  EXPECT_EQ(verdict.ending, mgpr::RankEnding::kOutOfMemory);
  EXPECT_TRUE(contains(verdict.message, "rank 3 of step 9.1 on gpu01 was killed for memory")) << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "lower batch_size or workers, or ask for more memory (--mem)"))
      << verdict.message;
  facts.out_of_memory = false;
  EXPECT_TRUE(contains(judge_exit(facts).message, "recorded no out-of-memory kill")) << judge_exit(facts).message;
  facts.out_of_memory.reset();
  EXPECT_TRUE(contains(judge_exit(facts).message, "no memory cgroup for the step")) << judge_exit(facts).message;
}

TEST(SpankWatchdog, EarlyExitMessage) {
  EXPECT_EQ(judge_exit(rank3_ended(exited_with(1))).message,
            "rank 3 of step 9.1 on gpu01 exited with code 1; ending the step so its peers do not wait for it in a "
            "collective");
  EXPECT_TRUE(contains(judge_exit(rank3_ended(killed_by(SIGSEGV))).message, "was killed by signal 11 (SIGSEGV"));
}

// Every ending the watchdog can give has one word and one decision in the table.
TEST(SpankWatchdog, EveryEndingHasItsRowInTheTable) {
  for (const auto ending : {mgpr::RankEnding::kFailed, mgpr::RankEnding::kUsageError, mgpr::RankEnding::kCrashed,
                            mgpr::RankEnding::kKilled, mgpr::RankEnding::kOutOfMemory}) {
    EXPECT_EQ(mgpr::rank_ending_row(ending).ending, ending);
  }
}

TEST(SpankProgressFolder, MadeReadyAndTidiedRemovingOnlyWhatThisNodeMade) {
  namespace fs = std::filesystem;
  const mgpr::test::TempDir scratch("mgpr-progress-");
  const auto root = scratch.path();
  fs::create_directories(root / "submit");
  const auto dir = progress_dir(root / "submit" / "slurm_logs" / "42", 0);
  const auto me = mgpr::test::this_process_user();
  {
    const ProgressFolder folder(me, dir, {0, 1});
    EXPECT_TRUE(fs::is_directory(dir));
    std::ofstream(progress_file(dir, 0)).put('x');
    std::ofstream(progress_file(dir, 1)).put('x');
    ASSERT_TRUE(folder.report_of(0).has_value());
    EXPECT_LT(folder.report_of(0)->seconds_since, 60.0);
    EXPECT_FALSE(folder.report_of(0)->finished);
    std::ofstream(progress_file(dir, 1)) << mgpr::kProgressFinished;
    ASSERT_TRUE(folder.report_of(1).has_value());
    EXPECT_TRUE(folder.report_of(1)->finished);
    EXPECT_FALSE(folder.report_of(2).has_value());
    auto ranks = folder.reporting_ranks();
    std::sort(ranks.begin(), ranks.end());
    EXPECT_EQ(ranks, (std::vector<int>{0, 1}));
  }
  EXPECT_FALSE(fs::exists(root / "submit" / "slurm_logs")) << "folders it made are removed when empty";
  EXPECT_TRUE(fs::exists(root / "submit"));

  fs::create_directories(dir);
  std::ofstream(progress_file(dir, 0)).put('x');  // stale, from a requeued run
  std::ofstream(progress_file(dir, 5)).put('x');  // another node's rank
  {
    const ProgressFolder folder(me, dir, {0, 1});
    EXPECT_FALSE(fs::exists(progress_file(dir, 0))) << "a stale report is cleared before the tasks start";
  }
  EXPECT_TRUE(fs::exists(progress_file(dir, 5))) << "another node's file stays";

  // Two concurrent steps of a job: the later one's end leaves no empty `progress`.
  fs::remove_all(root / "submit" / "slurm_logs");
  const auto job_dir = root / "submit" / "slurm_logs" / "43";
  {
    const ProgressFolder step0(me, progress_dir(job_dir, 0), {0});
    const ProgressFolder step1(me, progress_dir(job_dir, 1), {0});
  }
  EXPECT_FALSE(fs::exists(job_dir / "progress"));
}

}  // namespace
