// --mgpr-on-rank-loss: its parsers, the settings and environment it gives a step, and
// what the watchdog does under each value when a rank dies or stalls.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <map>
#include <string>
#include <vector>

#include "mgpr/env_names.hpp"
#include "plugstack_config.hpp"
#include "step_settings.hpp"
#include "support/error_of.hpp"
#include "support/text_search.hpp"
#include "task_environment.hpp"
#include "watchdog_rules.hpp"

namespace {

using namespace mgpr::spank;
using mgpr::OnRankLoss;
using mgpr::RankEnding;
using mgpr::test::contains;
using mgpr::test::error_of;

int exited_with(int code) { return code << 8; }  // a wait() status
int killed_by(int signal) { return signal; }

TEST(SpankRankLoss, TheOptionTakesFailOrContinueAndNamesItselfOtherwise) {
  EXPECT_EQ(parse_rank_loss("fail", "--mgpr-on-rank-loss"), OnRankLoss::kFail);
  EXPECT_EQ(parse_rank_loss("continue", "--mgpr-on-rank-loss"), OnRankLoss::kContinue);
  for (const std::string bad : {"", "Continue", "go-on", "continue ", "1"}) {
    const auto message = error_of([&] { parse_rank_loss(bad, "--mgpr-on-rank-loss"); });
    EXPECT_TRUE(contains(message, "--mgpr-on-rank-loss: '" + bad + "' is not fail or continue")) << message;
  }
}

TEST(SpankRankLoss, PlugstackSetsTheSiteDefaultAndTheOptionOverridesIt) {
  EXPECT_EQ(parse_plugstack_config(std::vector<std::string>{}).on_rank_loss, OnRankLoss::kFail);
  const auto site = parse_plugstack_config(std::vector<std::string>{"on_rank_loss=continue"});
  EXPECT_EQ(site.on_rank_loss, OnRankLoss::kContinue);
  const auto message = error_of([] { parse_plugstack_config(std::vector<std::string>{"on_rank_loss=maybe"}); });
  EXPECT_TRUE(contains(message, "plugstack.conf argument 'on_rank_loss=maybe': 'maybe' is not fail or continue"))
      << message;
  EXPECT_TRUE(contains(error_of([] { parse_plugstack_config(std::vector<std::string>{"rank_loss=fail"}); }),
                       "known keys: timeout, stall, bind, port_min, port_max, log_dir, strict, on_rank_loss"));

  StepOptions user;
  EXPECT_EQ(resolve_settings(user, site).on_rank_loss, OnRankLoss::kContinue);
  user.on_rank_loss = OnRankLoss::kFail;
  EXPECT_EQ(resolve_settings(user, site).on_rank_loss, OnRankLoss::kFail);
}

TEST(SpankRankLoss, EveryTaskIsToldTheStepsValue) {
  TaskFacts facts;
  facts.job_id = 7;
  facts.master_addr = "node1";
  facts.submit_dir = "/home/u";
  StepSettings settings;
  settings.port_min = 29500;
  settings.port_max = 29999;
  const auto value_of = [&] {
    std::map<std::string, std::string> env;
    for (const auto& [name, value] : task_environment(facts, settings)) env[name] = value;
    return env.at(mgpr::env::kOnRankLoss);
  };
  // fail too: the runtime refuses a config that says continue where the watchdog would end the step.
  EXPECT_EQ(value_of(), "fail");
  settings.on_rank_loss = OnRankLoss::kContinue;
  EXPECT_EQ(value_of(), "continue");
}

ExitFacts ended(int rank, int wait_status, OnRankLoss on_rank_loss) {
  ExitFacts facts;
  facts.job_id = 9;
  facts.step_id = 1;
  facts.host = "node2";
  facts.rank = rank;
  facts.wait_status = wait_status;
  facts.on_rank_loss = on_rank_loss;
  return facts;
}

TEST(SpankRankLoss, UnderContinueALostRankOtherThanZeroLeavesTheStepRunningNamedWithItsCause) {
  for (const int status : {exited_with(1), exited_with(137), killed_by(SIGKILL), killed_by(SIGSEGV)}) {
    const auto verdict = judge_exit(ended(3, status, OnRankLoss::kContinue));
    EXPECT_FALSE(verdict.end_step) << status;
    EXPECT_TRUE(verdict.lost) << status;
    EXPECT_TRUE(contains(verdict.message, "rank 3 of step 9.1 on node2 ")) << verdict.message;
    EXPECT_TRUE(contains(verdict.message,
                         "not ending the step (--mgpr-on-rank-loss=continue): the run goes on "
                         "without it"))
        << verdict.message;
    // The same death under fail ends the step, as it always did.
    const auto failing = judge_exit(ended(3, status, OnRankLoss::kFail));
    EXPECT_TRUE(failing.end_step) << status;
    EXPECT_FALSE(failing.lost) << status;
  }
  EXPECT_TRUE(contains(judge_exit(ended(3, exited_with(1), OnRankLoss::kContinue)).message, "exited with code 1"));
  EXPECT_TRUE(contains(judge_exit(ended(3, killed_by(SIGSEGV), OnRankLoss::kContinue)).message,
                       "was killed by signal 11 (SIGSEGV"));
  auto oom = ended(3, killed_by(SIGKILL), OnRankLoss::kContinue);
  oom.out_of_memory = true;
  const auto verdict = judge_exit(oom);
  EXPECT_TRUE(verdict.lost);
  EXPECT_EQ(verdict.ending, RankEnding::kOutOfMemory);
  EXPECT_TRUE(contains(verdict.message, "was killed for memory")) << verdict.message;
}

TEST(SpankRankLoss, UnderContinueRankZeroOrAUsageErrorStillEndsTheStep) {
  for (const int status : {exited_with(1), killed_by(SIGKILL), killed_by(SIGABRT)}) {
    const auto verdict = judge_exit(ended(0, status, OnRankLoss::kContinue));
    EXPECT_TRUE(verdict.end_step) << status;
    EXPECT_FALSE(verdict.lost) << status;
    EXPECT_TRUE(contains(verdict.message, "ending the step")) << verdict.message;
  }
  const auto usage = judge_exit(ended(2, exited_with(2), OnRankLoss::kContinue));
  EXPECT_TRUE(usage.end_step);
  EXPECT_EQ(usage.ending, RankEnding::kUsageError);
}

TEST(SpankRankLoss, UnderContinueWhatIsNoDeathStaysNoDeath) {
  for (const int status : {exited_with(0), exited_with(3), killed_by(SIGTERM), killed_by(SIGINT)}) {
    const auto verdict = judge_exit(ended(3, status, OnRankLoss::kContinue));
    EXPECT_FALSE(verdict.end_step) << status;
    EXPECT_FALSE(verdict.lost) << status;
  }
  auto scancel = ended(3, killed_by(SIGKILL), OnRankLoss::kContinue);
  scancel.slurm_ends_step = true;
  EXPECT_FALSE(judge_exit(scancel).lost) << "Slurm ending the job is not a loss the run goes on from";
}

// Ranks 0..2 on this node, all reported; `stalled` made no progress for 100 s.
WatchFacts stalled_ranks(const std::vector<int>& stalled, OnRankLoss on_rank_loss) {
  WatchFacts facts;
  facts.job_id = 9;
  facts.step_id = 1;
  facts.host = "node1";
  facts.world_size = 3;
  facts.elapsed_s = 200;
  facts.stall_timeout_s = 60;
  facts.on_rank_loss = on_rank_loss;
  for (int rank = 0; rank < 3; ++rank) {
    const bool is_stalled = std::find(stalled.begin(), stalled.end(), rank) != stalled.end();
    facts.local.push_back({.rank = rank, .arrived = true, .seconds_since_report = is_stalled ? 100.0 : 1.0});
  }
  return facts;
}

TEST(SpankRankLoss, UnderContinueAStalledRankOtherThanZeroIsLeftToTheRun) {
  const auto verdict = judge(stalled_ranks({2}, OnRankLoss::kContinue));
  EXPECT_FALSE(verdict.end_step);
  EXPECT_EQ(verdict.left_to_the_run, std::vector<int>{2});
  EXPECT_TRUE(contains(verdict.message, "stall: step 9.1 on node1: rank 2 made no progress for 100 s"))
      << verdict.message;
  EXPECT_TRUE(contains(verdict.message, "the run goes on without it")) << verdict.message;
  EXPECT_TRUE(judge(stalled_ranks({2}, OnRankLoss::kFail)).end_step);
}

TEST(SpankRankLoss, UnderContinueRankZeroStalledStillEndsTheStep) {
  const auto verdict = judge(stalled_ranks({0, 2}, OnRankLoss::kContinue));
  EXPECT_TRUE(verdict.end_step);
  EXPECT_TRUE(verdict.left_to_the_run.empty());
  EXPECT_TRUE(contains(verdict.message, "ranks 0,2 made no progress")) << verdict.message;
  EXPECT_FALSE(judge(stalled_ranks({}, OnRankLoss::kContinue)).end_step);
}

}  // namespace
