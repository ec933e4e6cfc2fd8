#pragma once
// Runs Slurm's client commands (sbatch, scontrol, sacct) without a shell, so no user
// value is ever re-parsed by one.
#include <string>
#include <vector>

namespace mgpr::launcher {

struct CommandResult {
  int exit_code = -1;  // 127: the program was not found
  std::string out;
  std::string err;
};

CommandResult run_command(const std::vector<std::string>& argv);

}  // namespace mgpr::launcher
