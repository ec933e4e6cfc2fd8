#include "shell_quote.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

// Runs `printf %s WORD` through a real shell and returns what it printed.
std::string through_shell(const std::string& word) {
  const std::string command = "printf %s " + mgpr::launcher::shell_quote(word);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  std::array<char, 256> buffer{};
  while (const auto count = std::fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), count);
  ::pclose(pipe);
  return out;
}

TEST(ShellQuote, PlainWordsStayReadable) {
  EXPECT_EQ(mgpr::launcher::shell_quote("/data/ortho_2024.tif"), "/data/ortho_2024.tif");
  EXPECT_EQ(mgpr::launcher::shell_quote("-x"), "'-x'");
  EXPECT_EQ(mgpr::launcher::shell_quote(""), "''");
}

TEST(ShellQuote, HostileNamesReachTheShellByteForByte) {
  for (const std::string name :
       {"with space.tif", "it's.tif", "\"double\".tif", "$(touch /tmp/mgpr-pwned).tif", "`id`.tif", "new\nline.tif",
        "-leading-dash.tif", "back\\slash", "*glob?[x]", "tab\there", "~user", "semi;colon&amp|pipe"}) {
    EXPECT_EQ(through_shell(name), name);
  }
}

}  // namespace
