#pragma once
// Every file operation the plugin makes for a job (its diagnoses, the progress folder)
// runs in a short-lived child process that has taken the job user's identity: uid,
// gid and supplementary groups. The plugin runs as root in slurmstepd and the paths
// come from the job, so the kernel must refuse whatever the user could not do
// themselves, and whatever is made belongs to the user. The child walks each path one
// folder at a time from `/` and never follows a symbolic link, not even one the user
// may follow. docs/spank.md, "Threat model", says why and what is left.
#include <sys/types.h>

#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr::spank {

struct JobUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
};

// What was refused, naming the path and the user.
class UserFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An open file descriptor, closed with the object.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  [[nodiscard]] int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

struct OpenedFolder {
  UniqueFd folder;  // read-only, for reads the plugin makes itself
  int made = 0;     // how many of the path's last folders the user's child made
};

// Opens `dir` (absolute) as `user`, making the missing folders (0755) when `create`.
// Throws UserFileError.
OpenedFolder open_folder_as(const JobUser& user, const std::filesystem::path& dir, bool create);

// Appends `text` to the regular file `name` in `dir`, making both as open_folder_as
// does (the file 0644), in one write with O_APPEND so lines from several nodes sharing
// the folder never interleave. Throws UserFileError.
void append_file_as(const JobUser& user, const std::filesystem::path& dir, const std::string& name,
                    std::string_view text);

// Removes the files `names` from `dir`; missing ones are fine. Throws UserFileError.
void remove_files_as(const JobUser& user, const std::filesystem::path& dir, std::span<const std::string> names);

// Removes `dir`, then up to `levels - 1` of its parents, while each is an empty folder
// (not a link); stops quietly at the first that is not.
void remove_empty_folders_as(const JobUser& user, const std::filesystem::path& dir, int levels) noexcept;

}  // namespace mgpr::spank
