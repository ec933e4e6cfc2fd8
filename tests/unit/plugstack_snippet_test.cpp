// templates/plugstack.conf is what administrators paste into Slurm's plugstack.conf:
// its plugin line must have Slurm's shape and arguments the plugin accepts, or every
// srun on the cluster would lose --mgpr (optional) or fail (required). The real-srun
// side of the same check is tests/slurm/plugstack_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plugstack_config.hpp"

namespace {

std::vector<std::string> plugin_lines() {
  std::ifstream in(MGPR_SOURCE_DIR "/templates/plugstack.conf");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() != '#') lines.push_back(line);
  }
  return lines;
}

TEST(PlugstackSnippet, ItsOneLineHasSlurmsShapeAndArgumentsThePluginAccepts) {
  const auto lines = plugin_lines();
  ASSERT_EQ(lines.size(), 1U) << "expected exactly one plugin line in templates/plugstack.conf";
  std::istringstream words(lines.front());
  std::string kind;
  std::string path;
  words >> kind >> path;
  EXPECT_TRUE(kind == "optional" || kind == "required") << kind;
  EXPECT_TRUE(path.starts_with("/") && path.ends_with("/mgpr.so")) << path;
  std::vector<std::string> args;
  for (std::string arg; words >> arg;) args.push_back(arg);
  const auto parsed = mgpr::spank::parse_plugstack_config(args);  // throws, naming the argument, if one is bad
  EXPECT_EQ(parsed.rendezvous_timeout_s, 300);
  EXPECT_EQ(parsed.stall_timeout_s, 600);
  EXPECT_EQ(parsed.bind, mgpr::spank::Bind::kGpu);
  EXPECT_EQ(parsed.port_min, 29500);
  EXPECT_EQ(parsed.port_max, 29999);
  EXPECT_TRUE(parsed.strict);
}

}  // namespace
