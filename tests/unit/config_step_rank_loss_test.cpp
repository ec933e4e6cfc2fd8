// The step's on_rank_loss, as the plugin exports it (MGPR_ON_RANK_LOSS), under the run's
// config: taken where the config does not set the key, refused where it sets the other.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/env_names.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"

namespace {

using mgpr::test::contains;
using mgpr::test::error_of;

// Sets the variable for one test and removes it after, whatever the test does.
class StepRankLoss : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv(mgpr::env::kOnRankLoss); }
  static void step_says(const char* value) { ::setenv(mgpr::env::kOnRankLoss, value, 1); }
  // With fake data, so the config is complete without a raster.
  static mgpr::RunConfig resolve(std::vector<std::string> arguments, const std::string& file = {}) {
    arguments.insert(arguments.begin(), "use_fake_data=true");
    return mgpr::resolve_config(file, arguments);
  }
};

TEST_F(StepRankLoss, WithoutTheVariableTheConfigAloneDecides) {
  EXPECT_EQ(resolve({}).on_rank_loss, "fail");
  EXPECT_EQ(resolve({"on_rank_loss=continue"}).on_rank_loss, "continue");
}

TEST_F(StepRankLoss, TheStepsValueIsTakenWhereTheConfigDoesNotSetIt) {
  step_says("continue");
  EXPECT_EQ(resolve({}).on_rank_loss, "continue");
  step_says("fail");
  EXPECT_EQ(resolve({}).on_rank_loss, "fail");
}

TEST_F(StepRankLoss, AConfigThatSaysTheSameIsFine) {
  step_says("continue");
  EXPECT_EQ(resolve({"on_rank_loss=continue"}).on_rank_loss, "continue");
  step_says("fail");
  EXPECT_EQ(resolve({"on_rank_loss=fail"}).on_rank_loss, "fail");
}

TEST_F(StepRankLoss, AConfigThatSetsTheOtherValueIsRefusedNamingBoth) {
  step_says("continue");
  const auto said_fail = error_of([] { resolve({"on_rank_loss=fail"}); });
  EXPECT_TRUE(contains(said_fail,
                       "the config sets on_rank_loss=fail but the step was started with "
                       "MGPR_ON_RANK_LOSS=continue (srun --mgpr-on-rank-loss=continue"))
      << said_fail;
  step_says("fail");
  const auto said_continue = error_of([] { resolve({"on_rank_loss=continue"}); });
  EXPECT_TRUE(contains(said_continue, "on_rank_loss=continue but the step was started with MGPR_ON_RANK_LOSS=fail"))
      << said_continue;
  EXPECT_TRUE(contains(said_continue, "give srun --mgpr-on-rank-loss=continue")) << said_continue;
}

// mgpr-submit's job config (every key written) sets it explicitly, in a file.
TEST_F(StepRankLoss, AFileSettingTheKeyCountsAsTheConfigSettingIt) {
  const mgpr::test::TempDir dir;
  const auto file = dir.path() / "run.toml";
  std::ofstream(file) << "on_rank_loss = \"fail\"\n";
  step_says("continue");
  EXPECT_TRUE(contains(error_of([&] { resolve({}, file.string()); }), "the config sets on_rank_loss=fail"));
  std::ofstream(file) << "batch_size = 2\n";
  EXPECT_EQ(resolve({}, file.string()).on_rank_loss, "continue");
}

TEST_F(StepRankLoss, ABadValueIsRefusedNamingTheVariable) {
  step_says("sometimes");
  const auto message = error_of([] { resolve({}); });
  EXPECT_TRUE(contains(message, "MGPR_ON_RANK_LOSS='sometimes' is not one of fail, continue")) << message;
}

// The step's continue meets the config's other keys as the key itself does.
TEST_F(StepRankLoss, TheStepsContinueIsCheckedAgainstStaticSharding) {
  step_says("continue");
  EXPECT_TRUE(contains(error_of([] { resolve({"sharding=static"}); }), "on_rank_loss=continue needs sharding=dynamic"));
}

TEST_F(StepRankLoss, CfgJobNamesTheEnvironmentAsTheOrigin) {
  step_says("continue");
  const auto text = mgpr::describe_resolved_config({}, std::vector<std::string>{"use_fake_data=true"});
  EXPECT_TRUE(contains(text, "on_rank_loss = 'continue'  # environment MGPR_ON_RANK_LOSS")) << text;
}

}  // namespace
