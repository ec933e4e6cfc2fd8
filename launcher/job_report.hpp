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
  bool has_logs = false;  // any file of the job exists

  // A plain-words account: never started, still running, died without a summary, ...
  [[nodiscard]] std::string verdict() const;
};

JobReport load_job_report(const JobLogLayout& layout, bool ask_slurm);
std::string job_table(const std::vector<JobReport>& jobs);
std::string rank_table(const JobReport& job);
std::string to_json_text(const std::vector<JobReport>& jobs);

}  // namespace mgpr::launcher
