#pragma once
// The folder of a step's progress files, <log_dir>/progress/<step>, as one node sees
// it: made ready before the node's tasks start, tidied when the step ends there. Only
// empty folders are removed, and above `progress` only those this node made, so a
// shared log folder, other nodes' files and anything of the user's stay.
#include <filesystem>
#include <vector>

namespace mgpr::spank {

class ProgressFolder {
 public:
  // Creates the folder (and missing parents) and removes stale files of `local_ranks`
  // (a requeued job runs again with the same job and step id). Throws
  // std::filesystem::filesystem_error naming the path when it cannot.
  ProgressFolder(std::filesystem::path dir, std::vector<int> local_ranks);
  ProgressFolder(const ProgressFolder&) = delete;
  ProgressFolder& operator=(const ProgressFolder&) = delete;
  ~ProgressFolder();  // never throws

  [[nodiscard]] const std::filesystem::path& path() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::vector<int> local_ranks_;
  std::filesystem::path created_top_;  // the outermost folder this node created; empty: none
};

}  // namespace mgpr::spank
