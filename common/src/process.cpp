#include "mgpr/process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "mgpr/exit_codes.hpp"

extern char** environ;

namespace mgpr {
namespace {

// argv/envp for posix_spawn: pointers into `strings`, ended by a null.
std::vector<char*> c_string_array(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_.data(), O_CLOEXEC) != 0) fds_ = {-1, -1};
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  [[nodiscard]] int read_end() const { return fds_[0]; }
  [[nodiscard]] int write_end() const { return fds_[1]; }
  void close_read() { close_fd(fds_[0]); }
  void close_write() { close_fd(fds_[1]); }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  std::array<int, 2> fds_{-1, -1};
};

class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  void open(int fd, const std::optional<std::filesystem::path>& file, int flags) {
    if (file) posix_spawn_file_actions_addopen(&actions_, fd, file->c_str(), flags, 0644);
  }
  void dup(int from, int fd) {
    if (from >= 0) posix_spawn_file_actions_adddup2(&actions_, from, fd);
  }
  [[nodiscard]] const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

class SpawnAttributes {
 public:
  explicit SpawnAttributes(const sigset_t* child_mask) {
    posix_spawnattr_init(&attributes_);
    if (child_mask == nullptr) return;
    sigset_t defaults;
    sigemptyset(&defaults);
    for (const int signal : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) sigaddset(&defaults, signal);
    posix_spawnattr_setsigmask(&attributes_, child_mask);
    posix_spawnattr_setsigdefault(&attributes_, &defaults);
    posix_spawnattr_setflags(&attributes_, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attributes_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  [[nodiscard]] const posix_spawnattr_t* get() const { return &attributes_; }

 private:
  posix_spawnattr_t attributes_{};
};

}  // namespace

pid_t spawn_process(const SpawnRequest& request) {
  if (request.argv.empty()) throw std::invalid_argument("spawn_process: argv is empty");
  FileActions actions;
  actions.open(0, request.stdin_file, O_RDONLY);
  actions.open(1, request.stdout_file, O_WRONLY | O_CREAT | O_TRUNC);
  actions.open(2, request.stderr_file, O_WRONLY | O_CREAT | O_TRUNC);
  actions.dup(request.stdout_fd, 1);
  actions.dup(request.stderr_fd, 2);
  const SpawnAttributes attributes(request.signal_mask);
  std::vector<std::string> argv = request.argv;
  const auto args = c_string_array(argv);
  std::vector<std::string> environment = request.environment.value_or(std::vector<std::string>{});
  const auto envp = c_string_array(environment);
  const std::string& program = request.program.empty() ? request.argv.front() : request.program;
  pid_t pid = -1;
  const auto spawn = request.search_path ? ::posix_spawnp : ::posix_spawn;
  const int error = spawn(&pid, program.c_str(), actions.get(), attributes.get(), args.data(),
                          request.environment ? envp.data() : environ);
  if (error != 0) throw std::system_error(error, std::generic_category(), "cannot start " + program);
  return pid;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult result;
  Pipe out;
  Pipe err;
  SpawnRequest request;
  request.argv = argv;
  request.search_path = true;
  request.stdin_file = "/dev/null";
  request.stdout_fd = out.write_end();
  request.stderr_fd = err.write_end();
  pid_t pid = -1;
  bool started = true;
  try {
    pid = spawn_process(request);
  } catch (const std::system_error&) {
    started = false;
  }
  out.close_write();
  err.close_write();
  if (!started) {
    result.exit_code = kExitCommandNotFound;
    result.err = argv.front() + ": command not found";
    return result;
  }
  // Drain both pipes together: a child blocked on a full stderr pipe would never exit.
  std::array<pollfd, 2> fds{pollfd{out.read_end(), POLLIN, 0}, pollfd{err.read_end(), POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_streams = 2;
  std::array<char, 4096> buffer{};
  while (open_streams > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const auto count = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (count > 0) {
        sinks[i]->append(buffer.data(), static_cast<std::size_t>(count));
      } else if (count == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_streams;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = exit_status_code(status);
  return result;
}

int exit_status_code(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

// The kernel picks a port nobody holds; the caller binds it right after. A race with
// another program in between is possible but rare, and the caller's bind says so.
int free_tcp_port(const char* for_what) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw std::runtime_error(
        fmt::format("finding a free port for {} failed: socket(): {}", for_what, std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok)
    throw std::runtime_error(fmt::format("finding a free port for {} failed: {}", for_what, std::strerror(error)));
  return ntohs(address.sin_port);
}

std::string host_name(const char* fallback) {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return fallback;
  return name.data();
}

}  // namespace mgpr
