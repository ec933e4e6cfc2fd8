#include "html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <set>

#include "mgpr/log_layout.hpp"
#include "mgpr/version.hpp"
#include "report_charts.hpp"

namespace mgpr::launcher {
namespace fs = std::filesystem;
namespace {

constexpr std::uintmax_t kLargestImage = 16U << 20U;
constexpr std::string_view kPngSignature = "\x89PNG\r\n\x1a\n";

std::string base64(std::string_view bytes) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      group = (group << 8U) | (j < left ? static_cast<unsigned char>(bytes[i + j]) : 0U);
    }
    for (std::size_t j = 0; j < 4; ++j) {
      out += j <= left ? kAlphabet[(group >> (18 - 6 * j)) & 0x3FU] : '=';
    }
  }
  return out;
}

constexpr std::string_view kStyle = R"(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; margin: 24px 32px; max-width: 1040px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #e5e7eb; }
h3 { font-size: 14px; margin: 14px 0 4px; }
.verdict { font-size: 14px; padding: 2px 10px; border-radius: 10px; margin-left: 10px; vertical-align: middle; }
.good { background: #dcfce7; color: #166534; } .bad { background: #fee2e2; color: #991b1b; } .neutral { background: #e5e7eb; }
table { border-collapse: collapse; } td, th { padding: 3px 10px; text-align: left; border-bottom: 1px solid #f3f4f6; }
th { background: #f9fafb; font-weight: 600; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { background: none; color: #4b5563; font-weight: 500; }
pre { background: #f9fafb; border: 1px solid #e5e7eb; padding: 8px 10px; overflow-x: auto; font-size: 12.5px; }
.status-ok { color: #166534; } .status-failed { color: #991b1b; font-weight: 600; } .status-interrupted { color: #92400e; }
svg.timeline, svg.throughput { max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: #374151; } svg text.tick { fill: #6b7280; font-size: 11px; }
svg text.note { fill: #9ca3af; font-style: italic; }
.legend span { display: inline-block; margin-right: 18px; } .key { display: inline-block; width: 14px; height: 10px; margin-right: 5px; vertical-align: middle; }
ul.problems li { margin: 3px 0; } .warning { color: #92400e; } .error { color: #991b1b; }
img.quicklook { max-width: 100%; border: 1px solid #e5e7eb; }
details { margin: 6px 0; } summary { cursor: pointer; color: #374151; }
footer { margin-top: 32px; color: #6b7280; font-size: 12px; }
)";

std::string verdict_class(const JobReport& job) {
  const auto totals = total(job.ranks);
  if (totals.failed_ranks > 0 || !failed_rasters(job).empty() ||
      (job.slurm && job.slurm->finished() && job.slurm->state != "COMPLETED"))
    return "bad";
  if (!job.ranks.empty() && job.verdict() == "finished") return "good";
  return "neutral";
}

std::string key_value(std::string_view key, const std::string& value) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", key, html_text(value));
}

// The srun lines of the batch script: the command the job ran.
std::string command_lines(const std::string& script) {
  std::string out;
  std::size_t start = 0;
  while (start < script.size()) {
    auto end = script.find('\n', start);
    if (end == std::string::npos) end = script.size();
    const auto line = std::string_view(script).substr(start, end - start);
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(first).starts_with("srun ")) {
      out += std::string(line.substr(first)) + "\n";
    }
    start = end + 1;
  }
  return out;
}

// "0 Tree" or "0 __background__, 1 person, ...": each label value with its name, the value
// being what the CSVs and class rasters hold.
std::string class_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t label = 0; label < names.size(); ++label) {
    out += fmt::format("{}{} {}", label == 0 ? "" : ", ", label, names[label]);
  }
  return out;
}

std::string job_section(const JobReport& job) {
  const auto totals = total(job.ranks);
  std::set<std::string> hosts;
  for (const auto& rank : job.ranks) hosts.insert(rank.host);
  std::string host_list;
  for (const auto& host : hosts) host_list += (host_list.empty() ? "" : ", ") + host;
  std::string out = "<h2 id=\"job\">Job</h2>\n<table class=\"kv\">\n";
  if (job.slurm) {
    out += key_value("Slurm state", fmt::format("{} (from {})", job.slurm->state, job.slurm->source));
    out += key_value("Exit code", job.slurm->signal != 0
                                      ? fmt::format("{}, signal {}", job.slurm->exit_code, job.slurm->signal)
                                      : std::to_string(job.slurm->exit_code));
    out += key_value("Restarts", job.slurm->restarts == 0
                                     ? std::string("none")
                                     : fmt::format("{}: the summaries are the last run's", job.slurm->restarts));
  } else {
    out += key_value("Slurm state", "unknown (Slurm no longer knows the job, or it was not asked)");
  }
  out += key_value("Nodes × ranks", geometry(job.ranks));
  out += key_value("Hosts", host_list.empty() ? "-" : host_list);
  out += key_value("Tiles", fmt::format("{} on {} rank(s), {:.2f} tiles/s over {:.1f} s (the slowest rank's loop)",
                                        totals.tiles, totals.ranks, totals.tiles_per_s(), totals.elapsed_s));
  // Every rank runs the same model with the same names: the first rank that names them says it.
  for (const auto& rank : job.ranks) {
    if (rank.model_card.empty() && rank.class_names.empty()) continue;
    if (!rank.model_card.empty()) out += key_value("Model", rank.model_card);
    if (!rank.class_names.empty()) out += key_value("Classes", class_list(rank.class_names));
    break;
  }
  if (const auto failed = failed_rasters(job).size(); failed > 0) {
    out += key_value("Failed rasters", fmt::format("{} (below): the other rasters finished", failed));
  }
  out += key_value("Log folder", job.log_dir);
  out += "</table>\n";
  if (const auto command = command_lines(job.batch_script); !command.empty()) {
    out += "<h3>Command</h3>\n<pre>" + html_text(command) + "</pre>\n";
  }
  // Collapsed: every key with its comment is a page long, and the timeline matters more.
  if (!job.config_text.empty()) {
    out += "<details><summary>Configuration (config.toml)</summary>\n<pre>" + html_text(job.config_text) +
           "</pre></details>\n";
  }
  if (!job.batch_script.empty()) {
    out += "<details><summary>Batch script</summary>\n<pre>" + html_text(job.batch_script) + "</pre></details>\n";
  }
  return out;
}

std::string gib(std::int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1U << 30U)) : "-";
}

std::string ranks_section(const JobReport& job) {
  if (job.ranks.empty()) return "<h2 id=\"ranks\">Ranks</h2>\n<p>No rank wrote a summary.</p>\n";
  std::string out =
      "<h2 id=\"ranks\">Ranks</h2>\n<table>\n<tr><th>Rank</th><th>Host</th><th>Device</th><th>Tiles</th>"
      "<th>Tiles/s</th><th>Busy</th><th>Waited for data</th><th>Memory avg / peak</th><th>Host "
      "peak</th><th>Status</th></tr>\n";
  for (const auto& rank : job.ranks) {
    const auto status = std::string(to_string(rank.status));
    out += fmt::format(
        "<tr><td class=\"n\">{}</td><td>{}</td><td>{}{}</td><td class=\"n\">{}</td><td class=\"n\">{:.2f}</td>"
        "<td class=\"n\">{:.1f}%</td><td class=\"n\">{:.2f} s</td><td class=\"n\">{} / {}</td>"
        "<td class=\"n\">{}</td><td class=\"status-{}\">{}</td></tr>\n",
        rank.rank, html_text(rank.host), html_text(rank.device),
        rank.gpu_name.empty() ? "" : " (" + html_text(rank.gpu_name) + ")", rank.tiles, rank.tiles_per_s(),
        rank.busy_percent(), rank.data_wait_s, gib(rank.memory_avg_bytes), gib(rank.memory_peak_bytes),
        rank.host_peak_bytes > 0 ? gib(rank.host_peak_bytes) : "-", status, status);
  }
  return out + "</table>\n";
}

// Rasters a rank could not read (unreadable, corrupt), by name with the reason: the run
// left their tiles undone, finished the others and exited non-zero.
std::string failed_rasters_section(const JobReport& job) {
  const auto failed = failed_rasters(job);
  if (failed.empty()) return "";
  std::string out = fmt::format(
      "<h2 id=\"failed-rasters\">Failed rasters</h2>\n<p>{} raster(s) could not be read: their tiles were left "
      "undone, the other rasters finished; a rerun does only what is missing.</p>\n<table>\n"
      "<tr><th>Raster</th><th>Reason</th><th>Rank</th></tr>\n",
      failed.size());
  for (const auto& raster : failed) {
    std::string ranks;
    for (const int rank : raster.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    out += fmt::format("<tr><td>{}</td><td class=\"error\">{}</td><td class=\"n\">{}</td></tr>\n",
                       html_text(raster.raster), html_text(raster.error), ranks);
  }
  return out + "</table>\n";
}

// Ranks the run lost while the tiles ran, as rank 0 recorded them: when, why, and the
// tiles they held.
std::string lost_ranks_section(const JobReport& job) {
  const auto lost = mgpr::lost_rank_lines(job.ranks);
  if (lost.empty()) return "";
  std::string out = fmt::format(
      "<h2 id=\"lost-ranks\">Lost ranks</h2>\n<p>{} rank(s) lost while the tiles ran.</p>\n<ul>\n", lost.size());
  for (const auto& line : lost) out += fmt::format("<li class=\"error\">{}</li>\n", html_text(line));
  return out + "</ul>\n";
}

std::string timeline_section(const JobReport& job) {
  const auto svg = timeline_svg(job.ranks);
  std::string out = "<h2 id=\"timeline\">Timeline</h2>\n";
  if (svg.empty())
    return out + "<p>No rank recorded a timeline (summaries written before mgpr recorded one have none).</p>\n";
  return out + svg +
         "<p class=\"legend\"><span><i class=\"key\" style=\"background:#2563eb\"></i>tiles/s (bar height)</span>"
         "<span><i class=\"key\" style=\"background:#f59e0b\"></i>waiting for data</span>"
         "<span><i class=\"key\" style=\"background:#dc2626;opacity:.55\"></i>stall: no tile finished</span>"
         "<span><i class=\"key\" style=\"background:#16a34a;border-radius:7px\"></i>done</span>"
         "<span><i class=\"key\" style=\"background:#d97706\"></i>stopped</span>"
         "<span style=\"color:#dc2626;font-weight:700\">✕</span> failed. Hover a bar or mark for its figures.</p>\n";
}

std::string throughput_section(const JobReport& job) {
  const auto svg = throughput_svg(job.ranks);
  return svg.empty() ? "" : "<h2 id=\"throughput\">Throughput per host and device</h2>\n" + svg;
}

std::string problems_section(const JobReport& job, const std::vector<std::string>& notes) {
  std::string items;
  for (const auto& rank : job.ranks) {
    if (!rank.error.empty()) {
      items += fmt::format("<li class=\"error\">rank {} ({}): {}</li>\n", rank.rank, to_string(rank.status),
                           html_text(rank.error));
    }
    for (const auto& warning : rank.warnings) {
      items += fmt::format("<li class=\"warning\">rank {}: {}</li>\n", rank.rank, html_text(warning));
    }
  }
  for (const auto& problem : job.problems) items += "<li class=\"error\">" + html_text(problem) + "</li>\n";
  for (const auto& note : notes) items += "<li class=\"warning\">" + html_text(note) + "</li>\n";
  std::string out = "<h2 id=\"problems\">Warnings and errors</h2>\n";
  out += items.empty() ? "<p>None reported by the ranks.</p>\n" : "<ul class=\"problems\">\n" + items + "</ul>\n";
  if (!job.diagnoses.empty()) {
    std::string text;
    for (const auto& line : job.diagnoses) text += line + "\n";
    out += "<h3>The plugin's diagnoses</h3>\n<pre>" + html_text(text) + "</pre>\n";
  }
  if (!job.stderr_tail.empty()) {
    std::string text;
    for (const auto& line : job.stderr_tail) text += line + "\n";
    out += "<h3>Last lines of stderr</h3>\n<pre>" + html_text(text) + "</pre>\n";
  }
  return out;
}

std::string quicklook_section(const std::vector<ReportImage>& images) {
  if (images.empty()) return "";
  std::string out = "<h2 id=\"quicklook\">Quicklook</h2>\n";
  for (const auto& image : images) {
    out += fmt::format(
        "<figure><img class=\"quicklook\" alt=\"{0}\" src=\"data:image/png;base64,{1}\">"
        "<figcaption>{0}</figcaption></figure>\n",
        html_text(image.path), base64(image.png));
  }
  return out;
}

}  // namespace

std::vector<ReportImage> quicklooks_of(const JobReport& job, std::vector<std::string>& notes) {
  std::vector<ReportImage> images;
  for (const auto& rank : job.ranks) {
    for (const auto& output : rank.outputs) {
      if (!output.ends_with("_quicklook.png")) continue;
      std::error_code ec;
      const auto size = fs::file_size(output, ec);
      if (ec) {
        notes.push_back(fmt::format("quicklook {}: not shown: {}", output, ec.message()));
        continue;
      }
      if (size > kLargestImage) {
        notes.push_back(
            fmt::format("quicklook {}: not shown: {} bytes, over the {} a page carries", output, size, kLargestImage));
        continue;
      }
      try {
        auto png = read_text_file(output);
        if (!png.starts_with(kPngSignature)) {
          notes.push_back(fmt::format("quicklook {}: not shown: not a PNG file", output));
          continue;
        }
        images.push_back({output, std::move(png)});
      } catch (const std::exception& error) {
        notes.push_back(fmt::format("quicklook {}: not shown: {}", output, error.what()));
      }
    }
  }
  return images;
}

std::string html_report(const JobReport& job, const std::vector<ReportImage>& images,
                        const std::vector<std::string>& notes, const std::string& generated) {
  std::string page = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>mgpr job {0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
      "<h1>mgpr job {0}<span class=\"verdict {2}\">{3}</span></h1>\n",
      html_text(job.job_id), kStyle, verdict_class(job), html_text(job.verdict() + restarts_note(job)));
  page += job_section(job);
  page += ranks_section(job);
  page += failed_rasters_section(job);
  page += lost_ranks_section(job);
  page += timeline_section(job);
  page += throughput_section(job);
  page += problems_section(job, notes);
  page += quicklook_section(images);
  page += fmt::format("<footer>{} · mgpr {}</footer>\n</body>\n</html>\n", html_text(generated), kVersion);
  return page;
}

}  // namespace mgpr::launcher
