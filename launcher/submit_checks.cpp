#include "submit_checks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mgpr/error.hpp"

namespace mgpr::launcher {
namespace fs = std::filesystem;
namespace {

void check_readable_file(const std::string& path, std::string_view what, std::string_view fix) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(fmt::format("{} '{}' does not exist; {}", what, path, fix));
  if (fs::is_directory(path, ec)) throw UsageError(fmt::format("{} '{}' is a folder, not a file; {}", what, path, fix));
  if (::access(path.c_str(), R_OK) != 0) {
    throw UsageError(fmt::format("{} '{}' cannot be read: {}; fix its permissions", what, path, std::strerror(errno)));
  }
}

// The nearest existing ancestor must be writable, so the runtime can create the rest.
void check_writable_dir(const std::string& path) {
  fs::path probe = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(probe, ec) && probe.has_parent_path() && probe != probe.parent_path()) probe = probe.parent_path();
  if (!fs::is_directory(probe, ec)) {
    throw UsageError(
        fmt::format("output_dir '{}': '{}' is not a folder; choose another output_dir", path, probe.string()));
  }
  if (::access(probe.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("output_dir '{}' cannot be written ('{}': {}); choose a folder you can write", path,
                                 probe.string(), std::strerror(errno)));
  }
}

}  // namespace

void check_inputs(const RunConfig& config) {
  if (!config.use_fake_data) {
    for (const auto& raster : config.image_path) {
      check_readable_file(raster, "raster", "check the path (relative paths are from the current folder)");
    }
  }
  if (!config.model.starts_with("builtin:")) {
    check_readable_file(config.model, "model", "give a TorchScript file or model=builtin:resnet50");
  }
  check_writable_dir(config.output_dir);
}

}  // namespace mgpr::launcher
