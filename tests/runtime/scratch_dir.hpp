#pragma once
// One temporary folder per test program (named by its pid), removed when the program
// ends, for the models and files a test saves.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace mgpr::test {

inline std::filesystem::path scratch_dir(const std::string& prefix) {
  const auto dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Register once per program: testing::AddGlobalTestEnvironment(new RemoveScratchDir(prefix)).
class RemoveScratchDir : public testing::Environment {
 public:
  explicit RemoveScratchDir(std::string prefix) : prefix_(std::move(prefix)) {}
  void TearDown() override { std::filesystem::remove_all(scratch_dir(prefix_)); }

 private:
  std::string prefix_;
};

}  // namespace mgpr::test
