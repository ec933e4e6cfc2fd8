#pragma once
// Starting real processes from a test: the helper rank, with chosen environment, output
// captured to files, and a hard limit so a hung rank fails the test instead of ctest.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mgpr/env_names.hpp"
#include "mgpr/process.hpp"
#include "support/temp_dir.hpp"

extern char** environ;  // NOLINT: POSIX's own declaration

namespace mgpr::test {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A port nobody listens on right now (the kernel's pick), so parallel tests differ.
inline int free_port() { return free_tcp_port("a test's MASTER_PORT"); }

// This process's environment without any rank variable (the test may itself run under
// srun --mgpr or torchrun), plus `set`.
inline std::vector<std::string> clean_environment(const std::map<std::string, std::string>& set) {
  static const std::vector<std::string> removed = {
      env::kRank,         env::kWorldSize,   env::kLocalRank,    env::kLocalWorldSize,    env::kNodeRank,
      env::kGroupRank,    env::kMasterAddr,  env::kMasterPort,   env::kSlurmProcId,       env::kSlurmNtasks,
      env::kSlurmLocalId, env::kSlurmNodeId, env::kProgressFile, env::kCudaVisibleDevices};
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::string name = text.substr(0, text.find('='));
    bool drop = set.contains(name);
    for (const auto& r : removed) drop = drop || name == r;
    if (!drop) out.push_back(text);
  }
  for (const auto& [name, value] : set) out.push_back(name + "=" + value);
  return out;
}

struct Finished {
  int code = -1;  // exit status, or 128 + signal
  std::string err;
  std::string out;
  double seconds = 0;
};

// One started process; its stdout and stderr go to files in `dir`.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& dir,
          const std::string& name)
      : out_path_(dir / (name + ".stdout")), err_path_(dir / (name + ".stderr")), started_(Clock::now()) {
    SpawnRequest request;
    request.argv = argv;
    request.environment = clean_environment(env);
    request.stdout_file = out_path_;
    request.stderr_file = err_path_;
    pid_ = spawn_process(request);
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }

  // Waits up to `limit`; a process still running then is killed and reported as 137
  // with "[killed by the test after N s]" in err.
  Finished wait(std::chrono::seconds limit) {
    Finished result;
    int status = 0;
    bool killed = false;
    const auto deadline = started_ + limit;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    result.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    result.code = exit_status_code(status);
    result.out = read_text(out_path_);
    result.err = read_text(err_path_);
    if (killed) result.err += "[killed by the test after " + std::to_string(limit.count()) + " s]";
    return result;
  }

 private:
  fs::path out_path_;
  fs::path err_path_;
  pid_t pid_ = -1;
  Clock::time_point started_;
};

inline Finished run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    const fs::path& dir, std::chrono::seconds limit) {
  Process process(argv, env, dir, "process");
  return process.wait(limit);
}

}  // namespace mgpr::test
