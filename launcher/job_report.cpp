#include "job_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr::launcher {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kStderrTailLines = 10;

std::vector<std::string> last_lines(const fs::path& file, std::size_t count) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

// A file of the job's that may be missing (a job that never started has no config).
std::string read_if_present(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return "";
  try {
    return read_text_file(file);
  } catch (const std::exception&) {
    return "";
  }
}

std::string memory(std::int64_t bytes) {
  if (bytes <= 0) return "-";
  return fmt::format("{:.1f}G", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string seconds(double s) { return s > 0 ? fmt::format("{:.1f}s", s) : "-"; }

}  // namespace

std::string geometry(const std::vector<RankSummary>& ranks) {
  if (ranks.empty()) return "-";
  std::map<std::string, int> per_host;
  for (const auto& rank : ranks) ++per_host[rank.host];
  int widest = 0;
  for (const auto& [host, count] : per_host) widest = std::max(widest, count);
  return fmt::format("{}x{}", per_host.size(), widest);
}

// A requeued job (preemption, node failure, scontrol requeue) runs again under the same
// id and log folder: say so, or its summaries look like one run's.
std::string restarts_note(const JobReport& job) {
  if (!job.slurm || job.slurm->restarts == 0) return "";
  return fmt::format("; restarted {} time(s): summaries are the last run's", job.slurm->restarts);
}

std::vector<FailedRaster> failed_rasters(const JobReport& job) {
  std::vector<FailedRaster> out;
  std::map<std::string, std::size_t> index;
  for (const auto& rank : job.ranks) {
    for (const auto& failure : rank.failed_rasters) {
      const auto [at, added] = index.try_emplace(failure.raster, out.size());
      if (added) out.push_back({failure.raster, failure.error, {}});
      auto& ranks = out[at->second].ranks;
      if (std::find(ranks.begin(), ranks.end(), rank.rank) == ranks.end()) ranks.push_back(rank.rank);
    }
  }
  for (auto& failure : out) std::sort(failure.ranks.begin(), failure.ranks.end());
  return out;
}

std::string JobReport::verdict() const {
  const bool ended = slurm && slurm->finished();
  if (slurm && slurm->state == "PENDING") return "pending: the job has not started yet";
  if (slurm && !ended) return "running: summaries appear when ranks finish";
  if (slurm && slurm->state.starts_with("CANCELLED")) return "cancelled";
  if (ranks.empty()) {
    if (!has_logs && !slurm) return "unknown job: no logs under the log dir and Slurm does not know it";
    if (ended || !slurm) return "no summary: the job never reached the runtime, or its ranks died before writing one";
  }
  const auto totals = total(ranks);
  if (totals.failed_ranks > 0) return fmt::format("{} of {} rank(s) did not finish", totals.failed_ranks, totals.ranks);
  if (const auto failed = failed_rasters(*this).size(); failed > 0) {
    return fmt::format("finished; {} raster(s) failed", failed);
  }
  return "finished";
}

JobReport load_job_report(const JobLogLayout& layout, bool ask_slurm) {
  JobReport report;
  report.job_id = layout.job_id;
  std::error_code ec;
  report.has_logs = fs::exists(layout.job_dir(), ec) || fs::exists(layout.stdout_log(), ec);
  if (ask_slurm) report.slurm = query_job_state(layout.job_id);
  for (const auto& file : list_rank_summaries(layout)) {
    try {
      report.ranks.push_back(rank_summary_from_json(read_text_file(file), file.string()));
    } catch (const UsageError& error) {
      report.problems.emplace_back(error.what());
    }
  }
  report.diagnoses = last_lines(layout.diagnoses(), 50);
  report.stderr_tail = last_lines(layout.stderr_log(), kStderrTailLines);
  report.log_dir = fs::absolute(layout.job_dir(), ec).string();
  report.batch_script = read_if_present(layout.batch_script());
  report.config_text = read_if_present(layout.resolved_config());
  return report;
}

std::string job_table(const std::vector<JobReport>& jobs) {
  std::string out = fmt::format("{:<10} {:<11} {:>4} {:>10} {:>8} {:>9} {:>9} {:>8}  {}\n", "JOBID", "STATE", "EXIT",
                                "NODESxGPUS", "TILES", "TILES/S", "ELAPSED", "WARNINGS", "NOTE");
  for (const auto& job : jobs) {
    const auto totals = total(job.ranks);
    out += fmt::format("{:<10} {:<11} {:>4} {:>10} {:>8} {:>9.2f} {:>9} {:>8}  {}\n", job.job_id,
                       job.slurm ? job.slurm->state : "-", job.slurm ? std::to_string(job.slurm->exit_code) : "-",
                       geometry(job.ranks), totals.tiles, totals.tiles_per_s(), seconds(totals.elapsed_s),
                       totals.warnings, job.verdict() + restarts_note(job));
  }
  return out;
}

std::string rank_table(const JobReport& job) {
  std::string out = fmt::format("job {}: {}{}", job.job_id, job.verdict(), restarts_note(job));
  if (job.slurm) {
    out += fmt::format(" (Slurm: {}, exit code {}{}, from {})", job.slurm->state, job.slurm->exit_code,
                       job.slurm->signal ? fmt::format(", signal {}", job.slurm->signal) : "", job.slurm->source);
  }
  out += "\n";
  if (!job.ranks.empty()) {
    out += fmt::format("{:>5} {:<12} {:<8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>6} {:<11}\n", "RANK", "HOST", "DEVICE",
                       "TILES", "TILES/S", "MEM", "PEAK", "RSS", "BUSY%", "STATUS");
    for (const auto& rank : job.ranks) {
      out += fmt::format("{:>5} {:<12} {:<8} {:>8} {:>8.2f} {:>7} {:>7} {:>7} {:>6.1f} {:<11}\n", rank.rank,
                         printable(rank.host), printable(rank.device), rank.tiles, rank.tiles_per_s(),
                         memory(rank.memory_avg_bytes), memory(rank.memory_peak_bytes),
                         rank.host_peak_bytes > 0 ? memory(rank.host_peak_bytes) : "-", rank.busy_percent(),
                         to_string(rank.status));
    }
    const auto totals = total(job.ranks);
    out += fmt::format("total: {} rank(s), {} tiles, {:.2f} tiles/s over {}; nodes x ranks: {}\n", totals.ranks,
                       totals.tiles, totals.tiles_per_s(), seconds(totals.elapsed_s), geometry(job.ranks));
    if (const auto store = store_requests_line(job.ranks); !store.empty()) out += store + "\n";
    for (const auto& rank : job.ranks) {
      if (!rank.error.empty()) out += fmt::format("rank {} error: {}\n", rank.rank, printable(rank.error));
      for (const auto& warning : rank.warnings) {
        out += fmt::format("rank {} warning: {}\n", rank.rank, printable(warning));
      }
    }
  }
  if (const auto failed = failed_rasters(job); !failed.empty()) {
    out += fmt::format("failed rasters ({}): the other rasters finished; a rerun does only what is missing\n",
                       failed.size());
    for (const auto& raster : failed) {
      out += fmt::format("  {}: {} (rank{} {})\n", printable(raster.raster), printable(raster.error),
                         raster.ranks.size() > 1 ? "s" : "", fmt::join(raster.ranks, ", "));
    }
  }
  if (const auto lost = mgpr::lost_rank_lines(job.ranks); !lost.empty()) {
    out += fmt::format("lost ranks ({}):\n", lost.size());
    for (const auto& line : lost) out += "  " + printable(line) + "\n";
  }
  // What jobs wrote is printed as text, never as terminal control sequences.
  for (const auto& problem : job.problems) out += fmt::format("problem: {}\n", printable(problem));
  if (!job.diagnoses.empty()) {
    out += "plugin diagnoses:\n";
    for (const auto& line : job.diagnoses) out += "  " + printable(line) + "\n";
  }
  if (!job.stderr_tail.empty()) {
    out += "last lines of stderr:\n";
    for (const auto& line : job.stderr_tail) out += "  " + printable(line) + "\n";
  }
  return out;
}

std::string jobs_json_text(const std::vector<JobReport>& jobs) {
  auto documents = nlohmann::json::array();
  for (const auto& job : jobs) {
    auto ranks = nlohmann::json::array();
    for (const auto& rank : job.ranks) ranks.push_back(nlohmann::json::parse(mgpr::to_json_text(rank)));
    nlohmann::json document{{"job_id", job.job_id},     {"verdict", job.verdict()},   {"ranks", ranks},
                            {"problems", job.problems}, {"diagnoses", job.diagnoses}, {"stderr_tail", job.stderr_tail}};
    auto failed = nlohmann::json::array();
    for (const auto& raster : failed_rasters(job)) {
      failed.push_back({{"raster", raster.raster}, {"error", raster.error}, {"ranks", raster.ranks}});
    }
    document["failed_rasters"] = failed;
    if (job.slurm) {
      document["slurm"] = {{"state", job.slurm->state},
                           {"exit_code", job.slurm->exit_code},
                           {"signal", job.slurm->signal},
                           {"restarts", job.slurm->restarts},
                           {"source", job.slurm->source}};
    }
    documents.push_back(document);
  }
  return documents.dump(2) + "\n";
}

}  // namespace mgpr::launcher
