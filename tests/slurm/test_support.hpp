#pragma once
// Helpers shared by the real-cluster tests.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mgpr/process.hpp"

namespace mgpr::test {

// A fresh folder under the test cluster's, for one test's job logs and files.
inline std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::path(MGPR_TEST_CLUSTER_DIR) / "scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// srun with the step's log folder (diagnoses, progress files) in `log_dir` rather than
// under the test's working directory.
inline CommandResult srun(const std::filesystem::path& log_dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"srun", "--export=ALL,MGPR_LOG_DIR=" + log_dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

}  // namespace mgpr::test
