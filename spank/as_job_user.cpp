#include "as_job_user.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace mgpr::spank {
namespace fs = std::filesystem;

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// No call of the child's takes this long on a healthy file system; past it the child
// is killed, so a hung file server does not hold slurmstepd's thread for good.
constexpr int kChildTimeoutMs = 30'000;

// O_PATH: walking needs only search permission on each folder, as `cd` does.
constexpr int kWalkFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Where the child's work stopped.
enum class Stage : int { kDone, kIdentity, kRoot, kFolder, kFile, kNotRegular, kWrite, kNoAnswer };

// The child's answer, sent as one datagram (plus a descriptor, when there is one).
struct Report {
  int error = 0;  // an errno value; 0: done
  Stage stage = Stage::kDone;
  int component = -1;  // kFolder: the path part that failed; kFile: the file
  int made = 0;        // how many of the path's last folders were made
};

// The parts of an absolute path below "/". Lexical normalisation is exact here: a
// path through a link is refused anyway, so "a/.." can only mean the lexical parent.
std::vector<std::string> path_parts(const fs::path& dir) {
  if (!dir.is_absolute()) {
    throw UserFileError(fmt::format("'{}' is not an absolute path; name the folder from /", dir.string()));
  }
  std::vector<std::string> parts;
  for (const auto& part : dir.lexically_normal().relative_path()) {
    if (!part.empty() && part != ".") parts.push_back(part.string());
  }
  return parts;
}

// --- The child's side: it runs alone in a copy of a possibly threaded slurmstepd, so
// it makes raw system calls on what the parent prepared and allocates nothing.

// Takes `user`'s identity for good. The raw calls change this thread alone, which is
// all the child has (glibc's wrappers would try to signal the parent's threads).
bool become(const JobUser& user) {
  // user_init runs with only the effective uid dropped: the saved uid gives root back,
  // which setting the groups needs. A process that was never root stays as it is and
  // may go on only if it already is the user.
  if (::geteuid() != 0) static_cast<void>(::syscall(SYS_setresuid, -1, 0, -1));
  if (::geteuid() == 0) {
    if (::syscall(SYS_setgroups, static_cast<int>(user.groups.size()), user.groups.data()) != 0) return false;
    if (::syscall(SYS_setresgid, user.gid, user.gid, user.gid) != 0) return false;
    if (::syscall(SYS_setresuid, user.uid, user.uid, user.uid) != 0) return false;
  }
  uid_t real = 0, effective = 0, saved = 0;
  gid_t real_group = 0, effective_group = 0, saved_group = 0;
  ::getresuid(&real, &effective, &saved);
  ::getresgid(&real_group, &effective_group, &saved_group);
  const bool is_user = real == user.uid && effective == user.uid && saved == user.uid && real_group == user.gid &&
                       effective_group == user.gid && saved_group == user.gid;
  // And no way back: a child of a job user who is not root must not regain root.
  if (!is_user || (user.uid != 0 && ::syscall(SYS_setresuid, -1, 0, -1) == 0)) {
    errno = EPERM;
    return false;
  }
  return true;
}

// Opens parts[0, count) below "/" in turn, never through a link, making the missing
// folders when `create`. Returns an O_PATH descriptor, or -1 with `report` filled.
int walk(const std::vector<std::string>& parts, std::size_t count, bool create, Report& report) {
  int folder = ::open("/", kWalkFlags);
  if (folder < 0) {
    report.error = errno;
    report.stage = Stage::kRoot;
    return -1;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const char* name = parts[i].c_str();
    int next = ::openat(folder, name, kWalkFlags);
    int error = errno;
    if (next < 0 && error == ENOENT && create) {
      if (::mkdirat(folder, name, 0755) == 0) {
        if (report.made == 0) report.made = static_cast<int>(count - i);
        next = ::openat(folder, name, kWalkFlags);
      } else if (errno == EEXIST) {  // another node of the step made it meanwhile
        next = ::openat(folder, name, kWalkFlags);
      }
      error = errno;
    }
    if (next < 0) {
      struct stat status {};
      if (::fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(status.st_mode)) error = ELOOP;
      ::close(folder);
      report.error = error;
      report.stage = Stage::kFolder;
      report.component = static_cast<int>(i);
      return -1;
    }
    ::close(folder);
    folder = next;
  }
  return folder;
}

void send_report(int socket, const Report& report, int fd) {
  Report copy = report;
  iovec data{&copy, sizeof copy};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  }
  static_cast<void>(::sendmsg(socket, &message, MSG_NOSIGNAL));
}

// --- The parent's side.

bool receive_report(int socket, Report& report, UniqueFd& handed) {
  pollfd waiting{socket, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&waiting, 1, kChildTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return false;
  iovec data{&report, sizeof report};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t received = 0;
  do {
    received = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
      handed = UniqueFd(fd);
    }
  }
  return received == static_cast<ssize_t>(sizeof report);
}

// Runs `work(report)` in a child process that has become `user`; `work` returns a
// descriptor to hand back (into `handed`), or -1.
template <class Work>
Report run_as(const JobUser& user, const Work& work, UniqueFd* handed = nullptr) {
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    throw UserFileError(fmt::format("cannot make a socket pair: {}", std::generic_category().message(errno)));
  }
  UniqueFd ours(sockets[0]);
  UniqueFd theirs(sockets[1]);
  const pid_t child = ::fork();
  if (child < 0) throw UserFileError(fmt::format("cannot fork: {}", std::generic_category().message(errno)));
  if (child == 0) {
    Report report;
    int fd = -1;
    if (become(user)) {
      fd = work(report);
    } else {
      report.error = errno;
      report.stage = Stage::kIdentity;
    }
    send_report(theirs.get(), report, fd);
    ::_exit(0);
  }
  theirs = UniqueFd();  // the child's end closes with the child, so a crash reads as no answer
  Report report;
  UniqueFd received;
  const bool answered = receive_report(ours.get(), report, received);
  if (!answered) ::kill(child, SIGKILL);
  // slurmstepd reaps unknown children with wait3() too; ECHILD then means just that.
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!answered) report = Report{.error = ETIMEDOUT, .stage = Stage::kNoAnswer};
  if (handed != nullptr) *handed = std::move(received);
  return report;
}

std::string prefix_of(const std::vector<std::string>& parts, int count) {
  std::string path;
  for (int i = 0; i < count && i < static_cast<int>(parts.size()); ++i)
    path += "/" + parts[static_cast<std::size_t>(i)];
  return path.empty() ? "/" : path;
}

// Turns a failed report into the message that says what was refused and how to mend it.
UserFileError refusal(const JobUser& user, const Report& report, const std::vector<std::string>& parts,
                      const std::string& file = {}) {
  const auto why = std::generic_category().message(report.error);
  const auto who = fmt::format("the job's user (uid {}, gid {})", user.uid, user.gid);
  const auto folder = prefix_of(parts, static_cast<int>(parts.size()));
  const auto file_path = file.empty() ? folder : (fs::path(folder) / file).string();
  switch (report.stage) {
    case Stage::kIdentity:
      return UserFileError(fmt::format("cannot act as {}: {}", who, why));
    case Stage::kFolder: {
      const auto at = prefix_of(parts, report.component + 1);
      if (report.error == ELOOP) {
        return UserFileError(
            fmt::format("'{}' is a symbolic link: the plugin runs as root and follows none; name the real folder "
                        "(`realpath` prints it)",
                        at));
      }
      if (report.error == ENOTDIR) return UserFileError(fmt::format("'{}' is not a folder", at));
      if (report.error == EACCES || report.error == EPERM || report.error == EROFS) {
        return UserFileError(fmt::format("{} may not reach or make '{}': {}", who, at, why));
      }
      return UserFileError(fmt::format("'{}': {}", at, why));
    }
    case Stage::kFile:
      if (report.error == ELOOP) {
        return UserFileError(
            fmt::format("'{}' is a symbolic link: the plugin runs as root and follows none; remove it", file_path));
      }
      return UserFileError(fmt::format("{} cannot open or remove '{}': {}", who, file_path, why));
    case Stage::kNotRegular:
      return UserFileError(fmt::format("'{}' is not a regular file; remove it or choose another folder", file_path));
    case Stage::kWrite:
      return UserFileError(fmt::format("cannot write '{}': {}", file_path, why));
    case Stage::kNoAnswer:
      return UserFileError(fmt::format("the process acting as {} on '{}' gave no answer", who, file_path));
    case Stage::kRoot:
    case Stage::kDone:
      break;
  }
  return UserFileError(fmt::format("'{}': {}", file_path, why));
}

void check_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    throw UserFileError(fmt::format("'{}' is not a file name", name));
  }
}

}  // namespace

OpenedFolder open_folder_as(const JobUser& user, const fs::path& dir, bool create) {
  const auto parts = path_parts(dir);
  UniqueFd folder;
  const auto report = run_as(
      user,
      [&](Report& answer) {
        const int path_only = walk(parts, parts.size(), create, answer);
        if (path_only < 0) return -1;
        // Read access for the listing the plugin makes, checked as the user.
        const int readable = ::openat(path_only, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (readable < 0) {
          answer.error = errno;
          answer.stage = Stage::kFolder;
          answer.component = static_cast<int>(parts.size()) - 1;
        }
        ::close(path_only);
        return readable;
      },
      &folder);
  if (report.error != 0) throw refusal(user, report, parts);
  if (folder.get() < 0) throw UserFileError(fmt::format("no descriptor came back for '{}'", dir.string()));
  return {std::move(folder), report.made};
}

void append_file_as(const JobUser& user, const fs::path& dir, const std::string& name, std::string_view text) {
  check_file_name(name);
  const auto parts = path_parts(dir);
  const auto report = run_as(user, [&](Report& answer) {
    const int folder = walk(parts, parts.size(), true, answer);
    if (folder < 0) return -1;
    // O_NONBLOCK: a FIFO put there opens at once (or fails), and is then refused.
    const int fd = ::openat(folder, name.c_str(),
                            O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    answer.error = errno;
    ::close(folder);
    if (fd < 0) {
      answer.stage = Stage::kFile;
      return -1;
    }
    answer.error = 0;
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
      answer.error = EINVAL;
      answer.stage = Stage::kNotRegular;
    } else {
      const auto written = ::write(fd, text.data(), text.size());
      if (written != static_cast<ssize_t>(text.size())) {
        answer.error = written < 0 ? errno : ENOSPC;
        answer.stage = Stage::kWrite;
      }
    }
    ::close(fd);
    return -1;
  });
  if (report.error != 0) throw refusal(user, report, parts, name);
}

void remove_files_as(const JobUser& user, const fs::path& dir, std::span<const std::string> names) {
  for (const auto& name : names) check_file_name(name);
  const auto parts = path_parts(dir);
  const auto report = run_as(user, [&](Report& answer) {
    const int folder = walk(parts, parts.size(), false, answer);
    if (folder < 0) {
      if (answer.error == ENOENT) answer = Report{};  // no folder, no files to remove
      return -1;
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (::unlinkat(folder, names[i].c_str(), 0) != 0 && errno != ENOENT && answer.error == 0) {
        answer.error = errno;
        answer.stage = Stage::kFile;
        answer.component = static_cast<int>(i);
      }
    }
    ::close(folder);
    return -1;
  });
  if (report.error != 0) {
    const auto file = report.stage == Stage::kFile ? names[static_cast<std::size_t>(report.component)] : std::string();
    throw refusal(user, report, parts, file);
  }
}

void remove_empty_folders_as(const JobUser& user, const fs::path& dir, int levels) noexcept {
  try {
    const auto parts = path_parts(dir);
    static_cast<void>(run_as(user, [&](Report& answer) {
      for (int level = 0; level < levels && level < static_cast<int>(parts.size()); ++level) {
        const auto index = parts.size() - 1 - static_cast<std::size_t>(level);
        const int parent = walk(parts, index, false, answer);
        if (parent < 0) break;
        const int removed = ::unlinkat(parent, parts[index].c_str(), AT_REMOVEDIR);
        ::close(parent);
        if (removed != 0) break;
      }
      answer = Report{};
      return -1;
    }));
  } catch (...) {
    // Tidying is a courtesy: what stays is an empty folder of the user's.
  }
}

}  // namespace mgpr::spank
