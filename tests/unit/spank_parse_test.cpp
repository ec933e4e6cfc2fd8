// The plugin's parsers: option values and plugstack.conf arguments. Each bad value must
// come back as a UsageError naming the input, never as a crash in slurmstepd.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mgpr/error.hpp"
#include "plugstack_config.hpp"
#include "step_settings.hpp"
#include "support/error_of.hpp"

namespace {

using namespace mgpr::spank;
using mgpr::UsageError;

using mgpr::test::error_of;

TEST(SpankParse, SecondsAcceptsWholeNumbersInRange) {
  EXPECT_EQ(parse_seconds("0", "--mgpr-timeout"), 0);
  EXPECT_EQ(parse_seconds("300", "--mgpr-timeout"), 300);
  EXPECT_EQ(parse_seconds("604800", "--mgpr-timeout"), 604800);
}

TEST(SpankParse, SecondsRefusesBadValuesByName) {
  for (const std::string bad : {"abc", "-5", "1e99", "", "12s", " 5", "604801", "99999999999999999999"}) {
    const auto message = error_of([&] { parse_seconds(bad, "--mgpr-timeout"); });
    EXPECT_NE(message.find("--mgpr-timeout: '" + bad + "' is not a whole number from 0 to 604800"), std::string::npos)
        << bad << ": " << message;
  }
}

TEST(SpankParse, AHugeValueIsQuotedShort) {
  const std::string huge(100 * 1024, '7');
  const auto message = error_of([&] { parse_seconds(huge, "--mgpr-stall"); });
  EXPECT_NE(message.find("--mgpr-stall: '7777"), std::string::npos) << message.substr(0, 200);
  EXPECT_NE(message.find("(102400 characters)"), std::string::npos) << message.substr(0, 200);
  EXPECT_LT(message.size(), 200U);
}

TEST(SpankParse, Port) {
  EXPECT_EQ(parse_port("1024", "--mgpr-port"), 1024);
  EXPECT_EQ(parse_port("65535", "--mgpr-port"), 65535);
  for (const std::string bad : {"80", "65536", "x", "", "-1"}) {
    EXPECT_NE(error_of([&] { parse_port(bad, "--mgpr-port"); }).find("is not a whole number from 1024 to 65535"),
              std::string::npos)
        << bad;
  }
}

TEST(SpankParse, Bind) {
  EXPECT_EQ(parse_bind("gpu", "--mgpr-bind"), Bind::kGpu);
  EXPECT_EQ(parse_bind("none", "--mgpr-bind"), Bind::kNone);
  EXPECT_NE(error_of([] { parse_bind("gpus", "--mgpr-bind"); }).find("--mgpr-bind: 'gpus' is not gpu or none"),
            std::string::npos);
}

TEST(SpankParse, PluginArgsDefaults) {
  const auto args = parse_plugstack_config(std::vector<std::string>{});
  EXPECT_EQ(args.rendezvous_timeout_s, 300);
  EXPECT_EQ(args.stall_timeout_s, 600);
  EXPECT_EQ(args.bind, Bind::kGpu);
  EXPECT_EQ(args.port_min, 29500);
  EXPECT_EQ(args.port_max, 29999);
  EXPECT_TRUE(args.log_dir.empty());
  EXPECT_TRUE(args.strict);
}

TEST(SpankParse, PluginArgsEveryKey) {
  const std::vector<std::string> line{
      "timeout=60", "stall=30", "bind=none", "port_min=40000", "port_max=40099", "log_dir=/scratch/logs", "strict=0"};
  const auto args = parse_plugstack_config(line);
  EXPECT_EQ(args.rendezvous_timeout_s, 60);
  EXPECT_EQ(args.stall_timeout_s, 30);
  EXPECT_EQ(args.bind, Bind::kNone);
  EXPECT_EQ(args.port_min, 40000);
  EXPECT_EQ(args.port_max, 40099);
  EXPECT_EQ(args.log_dir, "/scratch/logs");
  EXPECT_FALSE(args.strict);
}

// A site's slip is refused at load, not half-applied.
TEST(SpankParse, PluginArgsRefuseAnEmptyLogDirAndAKeyGivenTwice) {
  const auto empty = error_of([] { parse_plugstack_config(std::vector<std::string>{"log_dir="}); });
  EXPECT_NE(empty.find("log_dir is empty"), std::string::npos) << empty;
  const auto twice = error_of([] { parse_plugstack_config(std::vector<std::string>{"timeout=60", "timeout=0"}); });
  EXPECT_NE(twice.find("'timeout=0': 'timeout' is given twice"), std::string::npos) << twice;
}

TEST(SpankParse, PluginArgsErrorsNameTheArgument) {
  const auto unknown = error_of([] { parse_plugstack_config(std::vector<std::string>{"timout=5"}); });
  EXPECT_NE(unknown.find("plugstack.conf argument 'timout=5': unknown key 'timout'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("known keys: timeout"), std::string::npos) << unknown;
  const auto no_value = error_of([] { parse_plugstack_config(std::vector<std::string>{"strict"}); });
  EXPECT_NE(no_value.find("'strict': expected key=value"), std::string::npos) << no_value;
  const auto bad_bool = error_of([] { parse_plugstack_config(std::vector<std::string>{"strict=maybe"}); });
  EXPECT_NE(bad_bool.find("'maybe' is not 0 or 1"), std::string::npos) << bad_bool;
  const auto reversed = error_of([] {
    parse_plugstack_config(std::vector<std::string>{"port_min=30000", "port_max=29000"});
  });
  EXPECT_NE(reversed.find("port_min (30000) is above port_max (29000)"), std::string::npos) << reversed;
}

TEST(SpankSettings, OptionsOverridePlugstackDefaults) {
  PlugstackConfig site;
  site.rendezvous_timeout_s = 300;
  site.bind = Bind::kGpu;
  site.log_dir = "/scratch";
  site.strict = false;
  StepOptions user;
  user.enabled = true;
  user.bind = Bind::kNone;
  user.port = 31000;
  user.config_path = "run.toml";
  const auto settings = resolve_settings(user, site);
  EXPECT_TRUE(settings.enabled);
  EXPECT_EQ(settings.bind, Bind::kNone);
  EXPECT_EQ(settings.rendezvous_timeout_s, 300);
  EXPECT_EQ(settings.port, 31000);
  EXPECT_EQ(settings.config_path, "run.toml");
  EXPECT_EQ(settings.log_dir, "/scratch");
  EXPECT_FALSE(settings.strict);
}

}  // namespace
