// mgpr-logs: what happened to a job, from its rank summaries, the plugin's diagnoses,
// its stderr and Slurm's own record.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "job_report.hpp"
#include "mgpr/cli.hpp"
#include "mgpr/error.hpp"
#include "mgpr/version.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> job_ids;
  std::string log_dir = mgpr::kDefaultLogRoot;
  bool json = false;
  bool no_slurm = false;
  CLI::App app{"mgpr-logs: a table of mgpr jobs, or of the ranks of the jobs named."};
  app.set_version_flag("--version", std::string("mgpr-logs ") + mgpr::kVersion);
  app.add_option("jobid", job_ids, "job ids (default: every job under the log dir)");
  app.add_option("--log-dir", log_dir, "where job logs are")->capture_default_str();
  app.add_flag("--json", json, "print JSON instead of tables");
  app.add_flag("--no-slurm", no_slurm, "do not ask Slurm for job states (offline)");
  if (const auto exit_code = mgpr::parse_command_line(app, argc, argv)) return *exit_code;

  const bool listing = job_ids.empty();
  if (listing) job_ids = mgpr::list_job_ids(log_dir);
  std::vector<mgpr::launcher::JobReport> reports;
  for (const auto& id : job_ids) {
    if (!mgpr::is_job_id(id)) {
      fmt::print(stderr,
                 "mgpr-logs: error: '{}' is not a Slurm job id (digits, or digits_digits for an array "
                 "task)\n",
                 id);
      return mgpr::kExitUsage;
    }
    reports.push_back(mgpr::launcher::load_job_report({log_dir, id}, !no_slurm));
  }
  if (json) {
    fmt::print("{}", mgpr::launcher::to_json_text(reports));
  } else if (listing) {
    if (reports.empty()) {
      fmt::print("mgpr-logs: no jobs under '{}' (submit one with mgpr-submit, or pass --log-dir)\n", log_dir);
    } else {
      fmt::print("{}", mgpr::launcher::job_table(reports));
    }
  } else {
    for (const auto& report : reports) fmt::print("{}", mgpr::launcher::rank_table(report));
  }
  int status = 0;
  for (const auto& report : reports) {
    if (!listing && !report.has_logs && !report.slurm) status = 1;
  }
  return status;
}
