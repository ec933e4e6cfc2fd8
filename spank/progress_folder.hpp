#pragma once
// The folder of a step's progress files, <log_dir>/progress/<step>, as one node sees
// it: made ready before the node's tasks start, read by the watchdog, tidied when the
// step ends there. Making and tidying are done as the job's user (as_job_user.hpp);
// the watchdog reads through a descriptor opened then, never through a link. Only
// empty folders are removed, and above `progress` only those this node made, so a
// shared log folder, other nodes' files and anything of the user's stay.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "as_job_user.hpp"

namespace mgpr::spank {

class ProgressFolder {
 public:
  // Makes the folder (and missing parents) and removes stale files of `local_ranks`
  // (a requeued job runs again with the same job and step id). Throws UserFileError
  // naming the path when it cannot.
  ProgressFolder(JobUser user, std::filesystem::path dir, std::vector<int> local_ranks);
  ProgressFolder(const ProgressFolder&) = delete;
  ProgressFolder& operator=(const ProgressFolder&) = delete;
  ~ProgressFolder();  // never throws

  [[nodiscard]] const std::filesystem::path& path() const { return dir_; }

  struct Report {
    double seconds_since = 0;  // since the rank last touched its file
    bool finished = false;     // the file says the rank waits for its peers
  };
  // `rank`'s report; nullopt while it has no file (or something else under its name).
  [[nodiscard]] std::optional<Report> report_of(int rank) const;
  // The ranks with a file in the folder (other nodes' too, when the folder is shared).
  [[nodiscard]] std::vector<int> reporting_ranks() const;

 private:
  JobUser user_;
  std::filesystem::path dir_;
  std::vector<int> local_ranks_;
  std::vector<std::string> local_files_;
  UniqueFd folder_;
  int made_ = 0;  // how many of the path's last folders this node made
};

}  // namespace mgpr::spank
