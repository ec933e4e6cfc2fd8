#pragma once
// Where a job's files live, so the launcher, the plugin, the runtime and mgpr-logs
// agree without passing paths around:
//   <log_root>/<jobid>.out, <jobid>.err      Slurm's stdout/stderr (sbatch %j patterns)
//   <log_root>/<jobid>/job.sbatch            the script as submitted
//   <log_root>/<jobid>/config.toml           the resolved run configuration
//   <log_root>/<jobid>/rank-00000.json ...   one summary per rank (summary.hpp)
//   <log_root>/<jobid>/diagnoses.log         the plugin's findings (geometry, deadlock, stall)
//   <log_root>/<jobid>/endings.log           why the plugin ended a step early, a word a line
//                                            (rank_endings.hpp), read by the job script
//   <log_root>/<jobid>/rank-zero-exit.log    under --mgpr-on-rank-loss=continue, rank 0's exit
//                                            status, which the job script takes as the run's
//   <log_root>/<jobid>/progress/<step>/rank-00000 ...  each rank's heartbeat for the
//                                            plugin's watchdog (docs/spank.md)
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr {

inline constexpr const char* kDefaultLogRoot = "slurm_logs";
inline constexpr const char* kSbatchStdoutPattern = "%j.out";
inline constexpr const char* kSbatchStderrPattern = "%j.err";
inline constexpr const char* kStepEndingsFile = "endings.log";
// "<step> <status> <host>": the plugin writes it when rank 0 ends under
// --mgpr-on-rank-loss=continue (status as a shell gives it: the exit code, or 128 + the
// signal), since srun's own status is then non-zero for a rank the run went on without.
inline constexpr const char* kRankZeroExitFile = "rank-zero-exit.log";

struct JobLogLayout {
  std::filesystem::path log_root;
  std::string job_id;

  [[nodiscard]] std::filesystem::path job_dir() const { return log_root / job_id; }
  [[nodiscard]] std::filesystem::path stdout_log() const { return log_root / (job_id + ".out"); }
  [[nodiscard]] std::filesystem::path stderr_log() const { return log_root / (job_id + ".err"); }
  [[nodiscard]] std::filesystem::path batch_script() const { return job_dir() / "job.sbatch"; }
  [[nodiscard]] std::filesystem::path resolved_config() const { return job_dir() / "config.toml"; }
  [[nodiscard]] std::filesystem::path diagnoses() const { return job_dir() / "diagnoses.log"; }
  [[nodiscard]] std::filesystem::path step_endings() const { return job_dir() / kStepEndingsFile; }
  [[nodiscard]] std::filesystem::path rank_summary(int rank) const;
};

// The job's log folder, the same in the plugin and the runtime: <log_dir>/<jobid> when
// plugstack.conf names a log_dir (relative to the submit folder), else the one the task
// already has (MGPR_LOG_DIR, which mgpr-submit's job script exports), else
// <submit folder or .>/slurm_logs/<jobid>.
std::filesystem::path job_log_dir(const std::string& plugin_log_dir, const std::optional<std::string>& task_log_dir,
                                  const std::optional<std::string>& submit_dir, const std::string& job_id);

// <job log folder>/progress/<stepid>: the step's heartbeat files, shared by its nodes
// when the log folder is on a shared file system.
std::filesystem::path progress_dir(const std::filesystem::path& job_log_folder, std::uint32_t step_id);
// rank-00003 in that folder.
std::filesystem::path progress_file(const std::filesystem::path& dir, int rank);
// The rank a progress file's name stands for; nullopt for other names.
std::optional<int> rank_of_progress_file(const std::string& name);
// What a rank writes into its progress file once it has done its share and waits for
// its peers at the run's final gather: the watchdog does not count it as stalled.
inline constexpr std::string_view kProgressFinished = "finished\n";

// True for names Slurm gives jobs: "1234" or an array task "1234_7".
bool is_job_id(std::string_view name);
// The job ids that have a folder or a stdout log under log_root, oldest (smallest) first.
std::vector<std::string> list_job_ids(const std::filesystem::path& log_root);
// The rank summary files present in a job's folder, in rank order.
std::vector<std::filesystem::path> list_rank_summaries(const JobLogLayout& layout);

// Writes beside the target and renames over it, so a reader never sees half a file.
// Throws IoError (not UsageError: a full disk is not the user's typing) when it cannot.
void write_file_atomically(const std::filesystem::path& target, std::string_view content);
std::string read_text_file(const std::filesystem::path& file);

}  // namespace mgpr
