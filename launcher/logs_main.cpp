// mgpr-logs: what happened to a job, from its rank summaries, the plugin's diagnoses,
// its stderr and Slurm's own record.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <ctime>
#include <filesystem>

#include <chrono>

#include "html_report.hpp"
#include "job_report.hpp"
#include "mgpr/cli.hpp"
#include "mgpr/error.hpp"
#include "mgpr/version.hpp"

namespace {

// One page per job: into its log folder, or `file` ("-": stdout) for a single job.
int write_html_reports(const std::vector<mgpr::launcher::JobReport>& reports, const std::string& log_dir,
                       const std::string& file) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc);
  int status = 0;
  for (const auto& report : reports) {
    if (!report.has_logs) {
      fmt::print(stderr, "mgpr-logs: error: job {}: no logs under '{}' to report on ({})\n", report.job_id, log_dir,
                 report.verdict());
      status = 1;
      continue;
    }
    std::vector<std::string> notes;
    const auto images = mgpr::launcher::quicklooks_of(report, notes);
    const auto page = mgpr::launcher::html_report(report, images, notes,
                                                  fmt::format("Written {} by mgpr-logs from {}", when, report.log_dir));
    if (file == "-") {
      fmt::print("{}", page);
      continue;
    }
    const std::filesystem::path target = file.empty()
                                             ? std::filesystem::path(report.log_dir) / mgpr::launcher::kReportFileName
                                             : std::filesystem::path(file);
    try {
      if (file.empty()) std::filesystem::create_directories(target.parent_path());
      mgpr::write_file_atomically(target, page);
    } catch (const std::exception& error) {
      fmt::print(stderr, "mgpr-logs: error: job {}: cannot write the report '{}': {}\n", report.job_id, target.string(),
                 error.what());
      status = 1;
      continue;
    }
    fmt::print("mgpr-logs: wrote {}\n", target.string());
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> job_ids;
  std::string log_dir = mgpr::kDefaultLogRoot;
  bool json = false;
  bool no_slurm = false;
  bool html = false;
  std::string html_file;
  CLI::App app{"mgpr-logs: a table of mgpr jobs, or of the ranks of the jobs named."};
  app.set_version_flag("--version", std::string("mgpr-logs ") + mgpr::kVersion);
  app.add_option("jobid", job_ids, "job ids (default: every job under the log dir)");
  app.add_option("--log-dir", log_dir, "where job logs are")->capture_default_str();
  app.add_flag("--json", json, "print JSON instead of tables");
  app.add_flag("--no-slurm", no_slurm, "do not ask Slurm for job states (offline)");
  app.add_flag("--html", html,
               "write each job named as one self-contained HTML page (report.html in its log folder; no "
               "JavaScript, nothing fetched)");
  app.add_option("-o,--output", html_file, "with --html and one job: the page's file instead ('-': stdout)");
  if (const auto exit_code = mgpr::parse_command_line(app, argc, argv)) return *exit_code;

  const bool listing = job_ids.empty();
  if (html && listing) {
    fmt::print(stderr, "mgpr-logs: error: --html needs the job id(s) to report on, e.g. mgpr-logs 1234 --html\n");
    return mgpr::kExitUsage;
  }
  if (!html_file.empty() && (!html || job_ids.size() != 1)) {
    fmt::print(stderr, "mgpr-logs: error: --output names the page of one job: use it with --html and one job id\n");
    return mgpr::kExitUsage;
  }
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
  if (html) return write_html_reports(reports, log_dir, html_file);
  if (json) {
    fmt::print("{}", mgpr::launcher::jobs_json_text(reports));
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
