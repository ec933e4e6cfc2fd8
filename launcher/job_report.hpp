#pragma once
// What mgpr-logs shows: one line per job, or one table per job with a line per rank.
#include <optional>
#include <string>
#include <vector>

#include "job_state.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/summary.hpp"

namespace mgpr::launcher {

struct JobReport {
  std::string job_id;
  std::optional<JobState> slurm;  // nullopt: Slurm no longer (or never) knew it
  std::vector<RankSummary> ranks;
  std::vector<std::string> problems;   // unreadable summaries, with the file named
  std::vector<std::string> diagnoses;  // the plugin's findings
  std::vector<std::string> stderr_tail;
  std::string batch_script;  // job.sbatch as submitted, empty when absent
  std::string config_text;   // config.toml, the resolved run configuration
  std::string log_dir;       // the job's log folder
  bool has_logs = false;     // any file of the job exists

  // A plain-words account: never started, still running, died without a summary, ...
  [[nodiscard]] std::string verdict() const;
};

// A raster the job could not read, once however many ranks reported it: the first
// reason given, and every rank that reported it (ascending).
struct FailedRaster {
  std::string raster;
  std::string error;
  std::vector<int> ranks;
};
// In the order the ranks' summaries list them (rank by rank).
std::vector<FailedRaster> failed_rasters(const JobReport& job);

JobReport load_job_report(const JobLogLayout& layout, bool ask_slurm);
std::string job_table(const std::vector<JobReport>& jobs);
std::string rank_table(const JobReport& job);
std::string jobs_json_text(const std::vector<JobReport>& jobs);
// NODESxGPUS from the summaries ("2x4"): one rank per GPU, so the busiest host's rank
// count is the GPUs per node; "-" before any rank has written one.
std::string geometry(const std::vector<RankSummary>& ranks);
// "; restarted N time(s): summaries are the last run's", or "" for a job never requeued.
std::string restarts_note(const JobReport& job);

}  // namespace mgpr::launcher
