#pragma once
// How far a run under test has come, from its journal: the complete lines of every
// rank's `.tiles` file under OUTPUT/.mgpr-journal, summed. The fault tests act when a run
// is in its middle by this count, not after a sleep.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

namespace mgpr::test {

inline int journaled_tiles(const std::filesystem::path& output) {
  int lines = 0;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator entry(output / ".mgpr-journal", error), end;
       !error && entry != end; entry.increment(error)) {
    if (entry->path().extension() != ".tiles") continue;
    std::ifstream in(entry->path());
    lines += static_cast<int>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }
  return lines;
}

}  // namespace mgpr::test
