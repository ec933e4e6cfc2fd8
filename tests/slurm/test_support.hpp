#pragma once
// Helpers shared by the real-cluster tests.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "mgpr/process.hpp"
#include "support/eventually.hpp"
#include "support/text_search.hpp"

namespace mgpr::test {

// A fresh folder under a cluster's folder (by default the one-host test cluster's), for
// one test's job logs and files.
inline std::filesystem::path scratch(const std::string& name,
                                     const std::filesystem::path& cluster_dir = MGPR_TEST_CLUSTER_DIR) {
  const auto dir = cluster_dir / "scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The job id mgpr-submit prints as the first line of its standard output.
inline std::string job_id_of(const CommandResult& submitted) {
  return submitted.out.substr(0, submitted.out.find('\n'));
}

// A log that is not there yet reads as empty.
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

struct TimedResult {
  CommandResult result;
  double seconds = 0;
};

// srun as above, timed: how long the step took to end.
inline TimedResult timed_srun(const std::filesystem::path& log_dir, const std::vector<std::string>& args) {
  const auto start = std::chrono::steady_clock::now();
  auto result = srun(log_dir, args);
  return {std::move(result), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace mgpr::test
