#pragma once
// Helpers shared by the real-cluster tests.
#include <filesystem>
#include <string>

namespace mgpr::test {

// A fresh folder under the test cluster's, for one test's job logs and files.
inline std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::path(MGPR_TEST_CLUSTER_DIR) / "scratch" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace mgpr::test
