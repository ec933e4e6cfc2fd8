#include "report_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "mgpr/text.hpp"
#include "timeline_rows.hpp"

namespace mgpr::launcher {
namespace {

constexpr double kWidth = 980;
constexpr double kLabelWidth = 200;
constexpr double kRightMargin = 30;
constexpr double kRowHeight = 26;
constexpr double kRowGap = 8;
constexpr double kAxisHeight = 28;

// 1, 2 or 5 times a power of ten, giving about `ticks` steps over `span`.
double nice_step(double span, int ticks) {
  const double raw = span / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double factor : {1.0, 2.0, 5.0}) {
    if (raw <= factor * power) return factor * power;
  }
  return 10 * power;
}

// Seconds for a short run, minutes or hours for longer ones.
struct TimeUnit {
  double seconds;
  const char* name;
};
TimeUnit unit_for(double span_s) {
  if (span_s <= 180) return {1, "s"};
  if (span_s <= 3 * 3600) return {60, "min"};
  return {3600, "h"};
}

// A row's label cut to the label column. Whole characters only: a host name may be UTF-8.
std::string shortened(std::string label) {
  if (label.size() > 34) {
    std::size_t cut = 32;
    while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
    label = label.substr(0, cut) + "…";
  }
  return label;
}

}  // namespace

std::string html_text(std::string_view text) {
  // Line breaks stay (a config file or stderr shown in <pre>); printable() would show them
  // as \x0a like any other control byte.
  std::string shown;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find('\n', start), text.size());
    shown += printable(text.substr(start, end - start));
    if (end < text.size()) shown += '\n';
    start = end + 1;
  }
  std::string out;
  for (const char c : shown) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double stall_threshold_s(const RankSummary& rank) {
  std::vector<double> gaps;
  for (std::size_t i = 1; i < rank.timeline.size(); ++i) {
    gaps.push_back(rank.timeline[i].t_s - rank.timeline[i - 1].t_s);
  }
  if (gaps.empty()) return 5;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return std::max(5.0, 4 * gaps[gaps.size() / 2]);
}

std::string timeline_svg(std::span<const RankSummary> rank_summaries) {
  const auto rows = timeline_rows(rank_summaries);
  double first_start = 0;
  for (const auto& [label, rank] : rows) {
    if (rank.timeline.empty() || rank.started_unix_s <= 0) continue;
    if (first_start == 0 || rank.started_unix_s < first_start) first_start = rank.started_unix_s;
  }
  auto offset_of = [&](const RankSummary& rank) {
    return rank.started_unix_s > 0 && first_start > 0 ? rank.started_unix_s - first_start : 0.0;
  };
  double span = 0;
  double top_rate = 0;
  for (const auto& [label, rank] : rows) {
    if (rank.timeline.empty()) continue;
    span = std::max(span, offset_of(rank) + rank.timeline.back().t_s);
    for (std::size_t i = 1; i < rank.timeline.size(); ++i) {
      const double dt = rank.timeline[i].t_s - rank.timeline[i - 1].t_s;
      if (dt > 0)
        top_rate = std::max(top_rate, static_cast<double>(rank.timeline[i].tiles - rank.timeline[i - 1].tiles) / dt);
    }
  }
  if (span <= 0) return "";
  const double plot_width = kWidth - kLabelWidth - kRightMargin;
  const auto x_of = [&](double t) { return kLabelWidth + t / span * plot_width; };
  const double height = kAxisHeight + static_cast<double>(rows.size()) * (kRowHeight + kRowGap) + 4;

  std::string svg = fmt::format(
      "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" role=\"img\" aria-label=\"tiles over time, a row per {2}\">\n"
      "<defs><pattern id=\"stall\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#dc2626\" "
      "opacity=\"0.55\"/></pattern></defs>\n",
      kWidth, height, rank_summaries.size() <= kRankRowsUpTo ? "rank" : "host");

  const auto unit = unit_for(span);
  const double step = nice_step(span / unit.seconds, 8);
  for (double tick = 0; tick <= span / unit.seconds + 1e-9; tick += step) {
    const double x = x_of(tick * unit.seconds);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#d1d5db\"/><text x=\"{0:.1f}\" "
        "y=\"{3}\" class=\"tick\" text-anchor=\"middle\">{4:g} {5}</text>\n",
        x, kAxisHeight - 6, height - 4, kAxisHeight - 10, tick, unit.name);
  }

  double row_top = kAxisHeight;
  for (const auto& [label, rank] : rows) {
    const double mid = row_top + kRowHeight / 2;
    svg += fmt::format("<text x=\"6\" y=\"{:.1f}\" class=\"label\">{}</text>\n", mid + 4, html_text(shortened(label)));
    svg += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"#f3f4f6\"/>\n", kLabelWidth,
                       row_top, plot_width, kRowHeight);
    if (rank.timeline.empty()) {
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"note\">no timeline in this summary</text>\n",
                         kLabelWidth + 8, mid + 4);
      row_top += kRowHeight + kRowGap;
      continue;
    }
    const double offset = offset_of(rank);
    const double stall = stall_threshold_s(rank);
    for (std::size_t i = 1; i < rank.timeline.size(); ++i) {
      const auto& from = rank.timeline[i - 1];
      const auto& to = rank.timeline[i];
      const double dt = to.t_s - from.t_s;
      if (dt <= 0) continue;
      const double x = x_of(offset + from.t_s);
      const double width = std::max(0.6, x_of(offset + to.t_s) - x);
      const auto tiles = to.tiles - from.tiles;
      const double rate = static_cast<double>(tiles) / dt;
      const double waited = std::clamp((to.data_wait_s - from.data_wait_s) / dt, 0.0, 1.0);
      const auto when = fmt::format("{:.1f}–{:.1f} s", offset + from.t_s, offset + to.t_s);
      if (tiles == 0 && dt > stall) {
        svg += fmt::format(
            "<rect class=\"stall\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" "
            "fill=\"url(#stall)\"><title>stall: no tile finished for {:.1f} s ({})</title></rect>\n",
            x, row_top, width, kRowHeight, dt, when);
        continue;
      }
      if (rate > 0 && top_rate > 0) {
        const double bar = std::max(1.0, kRowHeight * rate / top_rate);
        svg += fmt::format(
            "<rect class=\"work\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
            "fill=\"#2563eb\"><title>{}: {} tiles, {:.2f} tiles/s, waited {:.0f}% for data</title></rect>\n",
            x, row_top + kRowHeight - bar, width, bar, when, tiles, rate, 100 * waited);
      }
      if (waited >= 0.05) {
        svg += fmt::format(
            "<rect class=\"wait\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"5\" fill=\"#f59e0b\" "
            "opacity=\"{:.2f}\"><title>{}: waited {:.0f}% of the time for data</title></rect>\n",
            x, row_top + kRowHeight - 5, width, 0.35 + 0.65 * waited, when, 100 * waited);
      }
    }
    const double end = x_of(offset + rank.timeline.back().t_s);
    const auto ended =
        fmt::format("{} at {:.1f} s with {} tiles{}", to_string(rank.status), offset + rank.timeline.back().t_s,
                    rank.timeline.back().tiles, rank.error.empty() ? "" : ": " + rank.error);
    switch (rank.status) {
      case RankStatus::kOk:
        svg += fmt::format(
            "<circle class=\"end-ok\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" "
            "fill=\"#16a34a\"><title>{}</title></circle>\n",
            end, mid, html_text(ended));
        break;
      case RankStatus::kInterrupted:
        svg += fmt::format(
            "<rect class=\"end-stopped\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" "
            "fill=\"#d97706\"><title>{}</title></rect>\n",
            end - 5, mid - 5, html_text(ended));
        break;
      case RankStatus::kFailed:
        svg += fmt::format(
            "<path class=\"end-failed\" d=\"M{0:.1f} {1:.1f}l12 12m0 -12l-12 12\" stroke=\"#dc2626\" "
            "stroke-width=\"3.5\"><title>{2}</title></path>\n",
            end - 6, mid - 6, html_text(ended));
        break;
    }
    row_top += kRowHeight + kRowGap;
  }
  return svg + "</svg>\n";
}

std::string throughput_svg(std::span<const RankSummary> ranks) {
  std::map<std::string, double> rate_of;
  for (const auto& rank : ranks) {
    rate_of[rank.host + " · " + rank.device + (rank.gpu_name.empty() ? "" : " (" + rank.gpu_name + ")")] +=
        rank.tiles_per_s();
  }
  if (rate_of.empty()) return "";
  double top = 0;
  for (const auto& [where, rate] : rate_of) top = std::max(top, rate);
  constexpr double kBarRow = 24;
  constexpr double kBarLabel = 300;
  const double width = 760;
  const double height = static_cast<double>(rate_of.size()) * kBarRow + 6;
  std::string svg = fmt::format(
      "<svg class=\"throughput\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 "
      "{0} {1}\" role=\"img\" aria-label=\"tiles per second per host and device\">\n",
      width, height);
  double y = 3;
  for (const auto& [where, rate] : rate_of) {
    const double bar = top > 0 ? (width - kBarLabel - 90) * rate / top : 0;
    svg += fmt::format(
        "<text x=\"4\" y=\"{0:.1f}\" class=\"label\">{1}</text><rect x=\"{2}\" y=\"{3:.1f}\" width=\"{4:.1f}\" "
        "height=\"16\" fill=\"#2563eb\"/><text x=\"{5:.1f}\" y=\"{0:.1f}\" class=\"label\">{6:.2f} tiles/s</text>\n",
        y + 13, html_text(where), kBarLabel, y, std::max(1.0, bar), kBarLabel + bar + 6, rate);
    y += kBarRow;
  }
  return svg + "</svg>\n";
}

}  // namespace mgpr::launcher
