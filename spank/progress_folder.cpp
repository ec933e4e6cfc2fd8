#include "progress_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <string_view>

#include "mgpr/log_layout.hpp"

namespace mgpr::spank {
namespace {

// The step's folder and `progress` are the plugin's own, whoever made them (concurrent
// steps of a job share `progress`), so they are always tried.
constexpr int kPluginsOwnLevels = 2;

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

}  // namespace

ProgressFolder::ProgressFolder(JobUser user, std::filesystem::path dir, std::vector<int> local_ranks)
    : user_(std::move(user)), dir_(std::move(dir)), local_ranks_(std::move(local_ranks)) {
  for (const int rank : local_ranks_) local_files_.push_back(progress_file(dir_, rank).filename().string());
  auto opened = open_folder_as(user_, dir_, /*create=*/true);
  folder_ = std::move(opened.folder);
  made_ = opened.made;
  remove_files_as(user_, dir_, local_files_);
}

ProgressFolder::~ProgressFolder() {
  try {
    remove_files_as(user_, dir_, local_files_);
  } catch (...) {
    // A file that stays is the user's, in the user's folder; the step is over anyway.
  }
  remove_empty_folders_as(user_, dir_, std::max(kPluginsOwnLevels, made_));
}

std::optional<ProgressFolder::Report> ProgressFolder::report_of(int rank) const {
  const auto name = progress_file(dir_, rank).filename();
  struct stat status {};
  if (::fstatat(folder_.get(), name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(status.st_mode)) {
    return std::nullopt;
  }
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  Report report;
  report.seconds_since = static_cast<double>(now.tv_sec - status.st_mtim.tv_sec) +
                         static_cast<double>(now.tv_nsec - status.st_mtim.tv_nsec) * 1e-9;
  // Read as root, so only a regular file, never through a link, and never waiting (a
  // FIFO swapped in after the check opens and is refused at once).
  if (status.st_size == static_cast<off_t>(kProgressFinished.size())) {
    const UniqueFd file(
        ::openat(folder_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat opened {};
    char text[16] = {};
    if (file.get() >= 0 && ::fstat(file.get(), &opened) == 0 && S_ISREG(opened.st_mode)) {
      const auto got = ::read(file.get(), text, sizeof text);
      report.finished = got == static_cast<ssize_t>(kProgressFinished.size()) &&
                        std::string_view(text, static_cast<std::size_t>(got)) == kProgressFinished;
    }
  }
  return report;
}

std::vector<int> ProgressFolder::reporting_ranks() const {
  std::vector<int> ranks;
  // fdopendir owns the descriptor it is given: a duplicate keeps ours open.
  const int copy = ::fcntl(folder_.get(), F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return ranks;
  const std::unique_ptr<DIR, DirCloser> listing(::fdopendir(copy));
  if (!listing) {
    ::close(copy);
    return ranks;
  }
  ::rewinddir(listing.get());
  while (const dirent* entry = ::readdir(listing.get())) {
    if (const auto rank = rank_of_progress_file(entry->d_name)) ranks.push_back(*rank);
  }
  return ranks;
}

}  // namespace mgpr::spank
