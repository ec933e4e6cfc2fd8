#pragma once
// Processes and ports, POSIX only, for every program that starts another: the launcher
// (sbatch, scontrol, sacct), the runtime's local launcher (`mgpr gpus=N`) and the tests.
#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mgpr {

struct CommandResult {
  int exit_code = -1;  // kExitCommandNotFound: the program was not found
  std::string out;
  std::string err;
};

// What a child process gets; what is left unset it inherits from this process.
struct SpawnRequest {
  std::vector<std::string> argv;
  std::string program;                                  // the file to run; empty: argv[0]
  bool search_path = false;                             // look `program` up on PATH
  std::optional<std::vector<std::string>> environment;  // "NAME=value" entries
  std::optional<std::filesystem::path> stdin_file;      // opened for reading
  std::optional<std::filesystem::path> stdout_file;     // created or truncated
  std::optional<std::filesystem::path> stderr_file;
  int stdout_fd = -1;  // made the child's stdout (a pipe's write end, say)
  int stderr_fd = -1;
  // The child's signal mask; given, SIGINT, SIGTERM, SIGCHLD and SIGPIPE also start at
  // their default action, so a parent that blocks or ignores them does not pass it on.
  const sigset_t* signal_mask = nullptr;
};

// Starts the child (posix_spawn: no shell, nothing re-parsed) and returns its pid;
// throws std::system_error naming the program when it cannot.
pid_t spawn_process(const SpawnRequest& request);

// Runs argv (searched on PATH, no shell, so no value is re-parsed by one) with stdin
// from /dev/null, and returns its exit status and both outputs.
CommandResult run_command(const std::vector<std::string>& argv);

// A shell's view of a waitpid status: the exit code, or 128 + the signal that killed it.
int exit_status_code(int wait_status);

// A TCP port nobody holds now (the kernel's choice); throws std::runtime_error saying
// what it was `for_what` when the kernel refuses.
int free_tcp_port(const char* for_what);

// This machine's name; `fallback` when the kernel will not say.
std::string host_name(const char* fallback);

}  // namespace mgpr
