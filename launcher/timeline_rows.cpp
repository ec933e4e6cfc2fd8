#include "timeline_rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace mgpr::launcher {
namespace {

std::string rank_label(const RankSummary& rank) {
  return fmt::format("rank {} · {} · {}", rank.rank, rank.host, rank.device);
}

// Rank `rank`'s figures `t_s` seconds after `origin` (unix seconds): the timeline's point
// interpolated linearly; nothing before its loop began, its last figures after it ended.
TimelinePoint at(const RankSummary& rank, double origin, double t_s) {
  const auto& points = rank.timeline;
  const double local = t_s - (rank.started_unix_s - origin);
  if (points.empty() || local <= points.front().t_s) return {t_s, 0, 0};
  if (local >= points.back().t_s) return {t_s, points.back().tiles, points.back().data_wait_s};
  const auto after = std::upper_bound(points.begin(), points.end(), local,
                                      [](double t, const TimelinePoint& point) { return t < point.t_s; });
  const auto& to = *after;
  const auto& from = *(after - 1);
  const double share = to.t_s > from.t_s ? (local - from.t_s) / (to.t_s - from.t_s) : 1.0;
  return {t_s, from.tiles + static_cast<std::int64_t>(share * static_cast<double>(to.tiles - from.tiles)),
          from.data_wait_s + share * (to.data_wait_s - from.data_wait_s)};
}

int severity(RankStatus status) {
  switch (status) {
    case RankStatus::kFailed:
      return 2;
    case RankStatus::kInterrupted:
      return 1;
    case RankStatus::kOk:
      break;
  }
  return 0;
}

TimelineRow host_row(const std::vector<const RankSummary*>& ranks, std::size_t points) {
  const auto& first = *ranks.front();
  TimelineRow row;
  row.label = fmt::format("{} · {} rank{} ({}–{})", first.host, ranks.size(), ranks.size() == 1 ? "" : "s", first.rank,
                          ranks.back()->rank);
  auto& host = row.activity;
  host.rank = first.rank;
  host.host = first.host;
  host.device = fmt::format("{} ranks", ranks.size());
  double origin = 0;
  double end = 0;
  for (const auto* rank : ranks) {
    if (rank->timeline.empty() || rank->started_unix_s <= 0) continue;
    if (origin == 0 || rank->started_unix_s < origin) origin = rank->started_unix_s;
  }
  for (const auto* rank : ranks) {
    if (severity(rank->status) > severity(host.status)) {
      host.status = rank->status;
      host.error = rank->error.empty() ? "" : fmt::format("rank {}: {}", rank->rank, rank->error);
    }
    host.tiles += rank->tiles;
    if (!rank->timeline.empty() && rank->started_unix_s > 0) {
      end = std::max(end, rank->started_unix_s - origin + rank->timeline.back().t_s);
    }
  }
  host.started_unix_s = origin;
  if (end <= 0) return row;
  const auto count = static_cast<double>(ranks.size());
  for (std::size_t i = 0; i <= points; ++i) {
    const double t_s = end * static_cast<double>(i) / static_cast<double>(points);
    TimelinePoint sum{t_s, 0, 0};
    for (const auto* rank : ranks) {
      if (rank->timeline.empty() || rank->started_unix_s <= 0) continue;
      const auto point = at(*rank, origin, t_s);
      sum.tiles += point.tiles;
      sum.data_wait_s += point.data_wait_s / count;
    }
    host.timeline.push_back(sum);
  }
  return row;
}

}  // namespace

std::vector<TimelineRow> timeline_rows(std::span<const RankSummary> ranks, std::size_t points) {
  std::vector<TimelineRow> rows;
  if (ranks.size() <= kRankRowsUpTo) {
    for (const auto& rank : ranks) rows.push_back({rank_label(rank), rank});
    return rows;
  }
  std::vector<std::string> hosts;  // in the order of their first rank
  std::map<std::string, std::vector<const RankSummary*>> ranks_of;
  for (const auto& rank : ranks) {
    auto& of_host = ranks_of[rank.host];
    if (of_host.empty()) hosts.push_back(rank.host);
    of_host.push_back(&rank);
  }
  for (const auto& host : hosts) rows.push_back(host_row(ranks_of.at(host), std::max<std::size_t>(points, 1)));
  return rows;
}

}  // namespace mgpr::launcher
