#pragma once
// Processes and ports, POSIX only, for every program that starts another: the launcher
// (sbatch, scontrol, sacct), the runtime's local launcher (`mgpr gpus=N`) and the tests.
#include <string>
#include <vector>

namespace mgpr {

struct CommandResult {
  int exit_code = -1;  // kExitCommandNotFound: the program was not found
  std::string out;
  std::string err;
};

// Runs argv (searched on PATH, no shell, so no value is re-parsed by one) with stdin
// from /dev/null, and returns its exit status and both outputs.
CommandResult run_command(const std::vector<std::string>& argv);

// A shell's view of a waitpid status: the exit code, or 128 + the signal that killed it.
int exit_status_code(int wait_status);

// argv/envp for exec and posix_spawn: pointers into `strings`, ended by a null.
std::vector<char*> c_string_array(std::vector<std::string>& strings);

// A TCP port nobody holds now (the kernel's choice); throws std::runtime_error saying
// what it was `for_what` when the kernel refuses.
int free_tcp_port(const char* for_what);

// This machine's name; `fallback` when the kernel will not say.
std::string host_name(const char* fallback);

}  // namespace mgpr
