#pragma once
// The tests' one way to a temporary folder: fresh (mkdtemp, so parallel test programs
// never share one) and removed with everything in it when the object goes.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace mgpr::test {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "mgpr-test-") {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// One folder for the whole test program (a suite's shared inputs), removed as it exits.
inline const TempDir& program_temp_dir() {
  static const TempDir dir("mgpr-program-");
  return dir;
}

}  // namespace mgpr::test
