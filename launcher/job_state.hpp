#pragma once
// A job's state as Slurm knows it: scontrol while slurmctld remembers the job, then
// sacct (or `sacct -c` where only jobcomp/filetxt records finished jobs).
#include <optional>
#include <string>
#include <string_view>

namespace mgpr::launcher {

struct JobState {
  std::string state;   // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  int exit_code = 0;   // the batch script's exit code
  int signal = 0;      // the signal that ended it, if any
  int restarts = 0;    // times Slurm requeued it: scontrol's Restarts= (sacct has no such field)
  std::string source;  // "scontrol", "sacct", "sacct -c"

  [[nodiscard]] bool finished() const;
};

// nullopt when no Slurm source knows the job.
std::optional<JobState> query_job_state(const std::string& job_id);

// The text of `scontrol show job -o ID`; nullopt without a JobState= field.
std::optional<JobState> parse_scontrol_job(std::string_view text);
// The text of `sacct -P -n -X -o JobID,State,ExitCode -j ID`: the job's newest record;
// nullopt when no line is the job's.
std::optional<JobState> parse_sacct_records(std::string_view text, std::string_view job_id, std::string source);

// Parses `ExitCode=2:0` / `2:0` into code and signal; false when malformed.
bool parse_exit_code(std::string_view text, int& code, int& signal);

}  // namespace mgpr::launcher
