// templates/plugstack.conf, with only the plugin's path replaced by the built one, read
// by a real srun. The snippet says `optional`, and Slurm silently drops an optional
// plugin whose init fails (a bad argument): so the proof is that srun then offers the
// plugin's options, and a control with one bad argument shows the check can fail.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::read_file;
using mgpr::test::scratch;
namespace fs = std::filesystem;

// A slurm.conf like the test cluster's whose PlugStackConfig is `plugstack`, so only
// this srun reads the snippet; the daemons keep theirs.
fs::path conf_with_plugstack(const fs::path& dir, const std::string& plugstack) {
  std::ofstream(dir / "plugstack.conf") << plugstack;
  const std::string cluster_conf = read_file(fs::path(MGPR_TEST_CLUSTER_DIR) / "etc" / "slurm.conf");
  const std::regex line("^PlugStackConfig=.*$", std::regex::multiline);
  const auto conf = dir / "slurm.conf";
  std::ofstream(conf) << std::regex_replace(cluster_conf, line, "PlugStackConfig=" + (dir / "plugstack.conf").string());
  return conf;
}

std::string snippet_with_built_plugin() {
  const std::string snippet = read_file(MGPR_PLUGSTACK_SNIPPET);
  const std::string installed = "/usr/local/lib/slurm/mgpr.so";
  const auto at = snippet.rfind(installed);
  EXPECT_NE(at, std::string::npos) << "templates/plugstack.conf no longer names " << installed;
  if (at == std::string::npos) return snippet;
  return std::string(snippet).replace(at, installed.size(), MGPR_PLUGIN);
}

mgpr::CommandResult srun_with(const fs::path& conf, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"env", "SLURM_CONF=" + conf.string(), "srun"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

TEST(PlugstackSnippet, ARealSrunLoadsThePluginWithItsArguments) {
  const auto dir = scratch("plugstack");
  const auto conf = conf_with_plugstack(dir, snippet_with_built_plugin());
  const auto help = srun_with(conf, {"--help"});
  EXPECT_TRUE(contains(help.out, "--mgpr-timeout")) << help.out << help.err;
  // And a real step through it: srun parses a plugin option only the plugin provides.
  const auto step = srun_with(conf, {"--mgpr-bind=none", "-n1", "true"});
  EXPECT_EQ(step.exit_code, 0) << step.err;
}

TEST(PlugstackSnippet, ControlABadArgumentDropsThePlugin) {
  const auto dir = scratch("plugstack-bad");
  const std::string broken = std::regex_replace(snippet_with_built_plugin(), std::regex("timeout=300"), "timeout=abc");
  ASSERT_TRUE(contains(broken, "timeout=abc"));
  const auto conf = conf_with_plugstack(dir, broken);
  const auto help = srun_with(conf, {"--help"});
  EXPECT_FALSE(contains(help.out, "--mgpr-timeout")) << help.out;
}

}  // namespace
