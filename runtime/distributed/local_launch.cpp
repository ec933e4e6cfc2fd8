#include "distributed/local_launch.hpp"

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/process.hpp"
#include "mgpr/text.hpp"
#include "resume/stop_request.hpp"

extern char** environ;  // NOLINT: POSIX's own declaration

namespace mgpr::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long ranks get to end cleanly after SIGTERM before SIGKILL.
constexpr auto kGrace = std::chrono::seconds(10);
constexpr long kPollNs = 100'000'000;  // wake for the grace deadline even without a signal

}  // namespace

void refuse_shared_gpus(int ranks, const std::string& visible) {
  const auto devices = split_list(visible);
  const auto asked = std::min(devices.size(), static_cast<std::size_t>(std::max(ranks, 0)));
  for (std::size_t later = 1; later < asked; ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      if (devices[earlier] != devices[later]) continue;
      throw UsageError(fmt::format(
          "CUDA_VISIBLE_DEVICES='{}' names GPU '{}' twice, so gpus={} would put ranks {} and {} on one GPU (NCCL "
          "refuses that, and CUDA shows no GPU for such a list): name each GPU once, or ask for fewer ranks",
          visible, devices[later], ranks, earlier, later));
    }
  }
}

namespace {

// Rank i gets the i-th GPU this process may use: CUDA_VISIBLE_DEVICES's i-th entry when
// it is set (a job already restricted to some GPUs), else device i.
std::vector<std::string> devices_for(int ranks) {
  std::vector<std::string> devices;
  if (const char* visible = std::getenv(env::kCudaVisibleDevices)) {
    devices = split_list(visible);
    if (devices.size() < static_cast<std::size_t>(ranks)) {
      throw UsageError(
          fmt::format("gpus={} asks for one GPU per rank, but CUDA_VISIBLE_DEVICES='{}' lists {}: ask "
                      "for at most {} ranks or widen CUDA_VISIBLE_DEVICES",
                      ranks, visible, devices.size(), devices.size()));
    }
    devices.resize(static_cast<std::size_t>(ranks));
  } else {
    for (int i = 0; i < ranks; ++i) devices.push_back(std::to_string(i));
  }
  return devices;
}

// This process's environment with the rank's torchrun variables (one node: local rank
// = rank, master on the loopback) and its device set over any inherited ones.
std::vector<std::string> child_environment(int rank, int ranks, int port, const std::optional<std::string>& device) {
  RankEnvironment rank_env;
  rank_env.rank = rank;
  rank_env.world_size = ranks;
  rank_env.local_rank = rank;
  rank_env.local_world_size = ranks;
  rank_env.master_addr = "127.0.0.1";
  rank_env.master_port = port;
  EnvAssignments overrides = torchrun_environment(rank_env);
  if (device) overrides.emplace_back(env::kCudaVisibleDevices, *device);
  overrides.emplace_back(env::kLauncherPid, std::to_string(::getpid()));
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [key, value] : overrides) replaced = replaced || name == key;
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [key, value] : overrides) out.push_back(key + "=" + value);
  return out;
}

std::string this_executable() {
  std::array<char, 4096> path{};
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  return length > 0 ? std::string(path.data(), static_cast<std::size_t>(length)) : std::string("/proc/self/exe");
}

std::string describe(int rank, int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("rank {} was killed by signal {} ({})", rank, WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  return fmt::format("rank {} exited with status {}", rank, WEXITSTATUS(status));
}

// Blocks SIGINT, SIGTERM, SIGHUP, SIGUSR2 and SIGCHLD in this thread for the launcher's lifetime, so they
// are taken with sigtimedwait instead of ending the launcher before its ranks.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGUSR2, SIGCHLD}) sigaddset(&set_, signal);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  }
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  [[nodiscard]] const sigset_t& set() const { return set_; }
  [[nodiscard]] const sigset_t& previous() const { return previous_; }

 private:
  sigset_t set_{};
  sigset_t previous_{};
};

struct Child {
  pid_t pid = -1;
  int rank = 0;
  bool running = true;
};

void signal_running(std::vector<Child>& children, int signal) {
  for (const auto& child : children) {
    if (child.running) ::kill(child.pid, signal);
  }
}

}  // namespace

int run_local_ranks(int ranks, bool one_gpu_each, const std::vector<std::string>& arguments, bool survive_rank_loss) {
  if (ranks < 1) throw UsageError(fmt::format("cannot start {} local ranks: ask for at least 1", ranks));
  const auto devices = one_gpu_each ? std::optional(devices_for(ranks)) : std::nullopt;
  const int port = free_tcp_port("MASTER_PORT");
  const std::string executable = this_executable();

  const BlockedSignals blocked;
  std::vector<Child> children;
  for (int rank = 0; rank < ranks; ++rank) {
    SpawnRequest request;
    request.argv = {executable};
    request.argv.insert(request.argv.end(), arguments.begin(), arguments.end());
    // /proc/self/exe, not argv[0]: the same binary even when started through a relative
    // path or PATH lookup.
    request.program = "/proc/self/exe";
    request.environment =
        child_environment(rank, ranks, port, devices ? device_for_rank(*devices, rank) : std::nullopt);
    request.signal_mask = &blocked.previous();
    pid_t pid = -1;
    try {
      pid = spawn_process(request);
    } catch (const std::system_error& error) {
      signal_running(children, SIGKILL);
      for (const auto& child : children) ::waitpid(child.pid, nullptr, 0);
      throw std::runtime_error(
          fmt::format("could not start local rank {} of {} ({}): {}", rank, ranks, executable, error.code().message()));
    }
    children.push_back({pid, rank, true});
  }

  std::optional<int> first_failure;
  std::optional<Clock::time_point> kill_at;
  const auto stop_others = [&] {
    signal_running(children, SIGTERM);
    if (!kill_at) kill_at = Clock::now() + kGrace;
  };
  std::size_t running = children.size();
  while (running > 0) {
    for (auto& child : children) {
      int status = 0;
      if (!child.running || ::waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
      child.running = false;
      --running;
      // A rank that stopped on request ends like its peers, which got the same signal
      // or finish the run; signalling them again would end them before they journal.
      if (exit_status_code(status) == kExitStopped && !first_failure) first_failure = kExitStopped;
      if (survive_rank_loss && child.rank != 0 && exit_status_code(status) != 0 &&
          exit_status_code(status) != kExitUsage && exit_status_code(status) != kExitStopped) {
        std::cerr << fmt::format("mgpr: {}; the others go on without it (on_rank_loss=continue)\n",
                                 describe(child.rank, status));
        continue;
      }
      if (exit_status_code(status) != 0 && exit_status_code(status) != kExitStopped &&
          (!first_failure || *first_failure == kExitStopped)) {
        first_failure = exit_status_code(status);
        if (running > 0) {
          std::cerr << fmt::format("mgpr: {}; stopping the other ranks\n", describe(child.rank, status));
        }
        stop_others();
      }
    }
    if (running == 0) break;
    if (kill_at && Clock::now() >= *kill_at) {
      std::cerr << fmt::format("mgpr: {} rank(s) still running {} s after SIGTERM; killing them\n", running,
                               kGrace.count());
      signal_running(children, SIGKILL);
      kill_at = Clock::time_point::max();  // once
    }
    siginfo_t info{};
    const timespec poll{0, kPollNs};
    const int signal = sigtimedwait(&blocked.set(), &info, &poll);
    if (signal == SIGUSR2) {
      // The stop before walltime: ranks finish their batch and journal it (exit 3). No
      // grace deadline: Slurm itself ends the job at walltime.
      signal_running(children, signal);
    } else if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
      // A terminal's Ctrl-C (si_code SI_KERNEL) already reached the ranks, which share
      // the launcher's process group; a kill aimed at the launcher alone did not.
      if (info.si_code != SI_KERNEL) signal_running(children, signal);
      if (!kill_at) kill_at = Clock::now() + kGrace;
    }
  }
  return first_failure.value_or(0);
}

void follow_local_launcher() {
  const char* launcher = std::getenv(env::kLauncherPid);
  if (launcher == nullptr) return;
  const auto pid = parse_number<pid_t>(launcher);
  if (!pid) return;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The launcher may have died before the prctl: then this rank's parent is no longer it.
  if (::getppid() != *pid) ::kill(::getpid(), SIGTERM);
}

}  // namespace mgpr::runtime
