#include "progress_folder.hpp"

#include "mgpr/log_layout.hpp"
#include "watchdog_rules.hpp"

namespace mgpr::spank {
namespace {

// The outermost of `dir` and its parents that does not exist yet; empty if `dir` does.
std::filesystem::path outermost_missing(const std::filesystem::path& dir) {
  std::filesystem::path missing;
  for (auto path = dir; !path.empty() && !std::filesystem::exists(path); path = path.parent_path()) {
    missing = path;
    if (path == path.parent_path()) break;
  }
  return missing;
}

}  // namespace

ProgressFolder::ProgressFolder(std::filesystem::path dir, std::vector<int> local_ranks)
    : dir_(std::move(dir)), local_ranks_(std::move(local_ranks)), created_top_(outermost_missing(dir_)) {
  std::filesystem::create_directories(dir_);
  for (const int rank : local_ranks_) std::filesystem::remove(progress_file(dir_, rank));
}

ProgressFolder::~ProgressFolder() {
  std::error_code ignored;
  for (const int rank : local_ranks_) std::filesystem::remove(progress_file(dir_, rank), ignored);
  // remove() deletes a folder only when it is empty: one still holding another node's
  // files, or anything else, stays. The step's folder and `progress` are the plugin's
  // own, whoever made them (concurrent steps of a job share `progress`); above them
  // only what this node made goes.
  const auto progress_root = dir_.parent_path();
  if (!std::filesystem::remove(dir_, ignored) || !std::filesystem::remove(progress_root, ignored)) return;
  if (created_top_.empty() || created_top_ == dir_ || created_top_ == progress_root) return;
  for (auto path = progress_root.parent_path(); !path.empty(); path = path.parent_path()) {
    if (!std::filesystem::remove(path, ignored) || path == created_top_) break;
  }
}

}  // namespace mgpr::spank
