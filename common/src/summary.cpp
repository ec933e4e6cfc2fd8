#include "mgpr/summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr {
namespace {

using nlohmann::json;

RankStatus status_from_string(std::string_view text, std::string_view source) {
  for (const auto status : {RankStatus::kOk, RankStatus::kFailed, RankStatus::kInterrupted}) {
    if (to_string(status) == text) return status;
  }
  throw UsageError(fmt::format("{}: unknown rank status '{}'", source, text));
}

// [[t_s, tiles, data_wait_s], ...]: a few hundred points stay a few kilobytes.
json timeline_json(const std::vector<TimelinePoint>& points) {
  auto list = json::array();
  for (const auto& p : points) list.push_back(json::array({p.t_s, p.tiles, p.data_wait_s}));
  return list;
}

// [{"raster": ..., "error": ...}, ...]
json failures_json(const std::vector<RasterFailureRecord>& failures) {
  auto list = json::array();
  for (const auto& f : failures) list.push_back({{"raster", f.raster}, {"error", f.error}});
  return list;
}

}  // namespace

std::string_view to_string(RankStatus status) {
  switch (status) {
    case RankStatus::kOk:
      return "ok";
    case RankStatus::kFailed:
      return "failed";
    case RankStatus::kInterrupted:
      return "interrupted";
  }
  return "unknown";
}

namespace {

json lost_ranks_json(const std::vector<LostRankRecord>& lost) {
  auto list = json::array();
  for (const auto& rank : lost) {
    list.push_back({{"rank", rank.rank},
                    {"host", rank.host},
                    {"lost_unix_s", rank.lost_unix_s},
                    {"why", rank.why},
                    {"tiles_held", rank.tiles_held},
                    {"done_again", rank.done_again},
                    {"tiles", rank.tiles}});
  }
  return list;
}

}  // namespace

std::string to_json_text(const RankSummary& s) {
  const json document = {
      {"schema", kSummarySchema},
      {"job_id", s.job_id},
      {"step_id", s.step_id},
      {"rank", s.rank},
      {"world_size", s.world_size},
      {"local_rank", s.local_rank},
      {"local_world_size", s.local_world_size},
      {"node_rank", s.node_rank},
      {"master_addr", s.master_addr},
      {"master_port", s.master_port},
      {"visible_devices", s.visible_devices},
      {"host", s.host},
      {"device", s.device},
      {"gpu_name", s.gpu_name},
      {"tiles", s.tiles},
      {"batches", s.batches},
      {"elapsed_s", s.elapsed_s},
      {"model_s", s.model_s},
      {"read_s", s.read_s},
      {"data_wait_s", s.data_wait_s},
      {"tiles_per_s", s.tiles_per_s()},  // derived, written for people and other tools
      {"memory_avg_bytes", s.memory_avg_bytes},
      {"memory_peak_bytes", s.memory_peak_bytes},
      {"memory_total_bytes", s.memory_total_bytes},
      {"memory_device_peak_bytes", s.memory_device_peak_bytes},
      {"host_peak_bytes", s.host_peak_bytes},
      {"writer_held_peak_tiles", s.writer_held_peak_tiles},
      {"box_cap", s.box_cap},
      {"tiles_at_box_cap", s.tiles_at_box_cap},
      {"store_requests", s.store_requests},
      {"status", to_string(s.status)},
      {"error", s.error},
      {"warnings", s.warnings},
      {"started_unix_s", s.started_unix_s},
      {"timeline", timeline_json(s.timeline)},
      {"outputs", s.outputs},
      {"failed_rasters", failures_json(s.failed_rasters)},
      {"lost_ranks", lost_ranks_json(s.lost_ranks)},
      {"class_names", s.class_names},
      {"model_card", s.model_card},
  };
  return document.dump(2) + "\n";
}

namespace {

// A whole number of type T, refused when the document holds a fraction or one past T's
// range: nlohmann's get<int>() of 1e82 converts out of range, which is undefined
// behaviour (found by fuzzing, docs/reliability.md).
template <class T>
T whole_value(const json& value, std::string_view key, std::string_view source) {
  const bool fits = value.is_number_unsigned()
                        ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                        : value.is_number_integer() && value.get<std::int64_t>() >= std::numeric_limits<T>::min() &&
                              value.get<std::int64_t>() <= std::numeric_limits<T>::max();
  if (!fits) {
    throw UsageError(fmt::format("{}: not a valid summary: '{}' must be a whole number from {} to {}, got {}", source,
                                 key, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                                 quote_short(value.dump())));
  }
  return value.is_number_unsigned() ? static_cast<T>(value.get<std::uint64_t>())
                                    : static_cast<T>(value.get<std::int64_t>());
}

template <class T>
T whole(const json& document, const char* key, std::string_view source) {
  return whole_value<T>(document.at(key), key, source);
}

template <class T>
T whole_or(const json& document, const char* key, T fallback, std::string_view source) {
  return document.contains(key) ? whole<T>(document, key, source) : fallback;
}

std::vector<TimelinePoint> timeline_from_json(const json& document, std::string_view source) {
  std::vector<TimelinePoint> points;
  if (!document.contains("timeline")) return points;
  for (const auto& item : document.at("timeline")) {
    if (!item.is_array() || item.size() != 3) {
      throw UsageError(
          fmt::format("{}: not a valid summary: a 'timeline' point must be [seconds, tiles, "
                      "seconds waited], got {}",
                      source, quote_short(item.dump())));
    }
    points.push_back(
        {item[0].get<double>(), whole_value<std::int64_t>(item[1], "tiles", source), item[2].get<double>()});
  }
  return points;
}

std::vector<LostRankRecord> lost_ranks_from_json(const json& document, std::string_view source) {
  std::vector<LostRankRecord> lost;
  if (!document.contains("lost_ranks")) return lost;  // summaries written before it existed
  const auto& list = document.at("lost_ranks");
  const auto refuse = [&](const json& got) {
    return UsageError(fmt::format(
        "{}: not a valid summary: 'lost_ranks' must be a list of {{\"rank\": ..., \"why\": ..., ...}}, got {}", source,
        quote_short(got.dump())));
  };
  if (!list.is_array()) throw refuse(list);
  for (const auto& item : list) {
    if (!item.is_object() || !item.contains("rank") || !item.value("tiles", json::array()).is_array())
      throw refuse(item);
    LostRankRecord rank{whole_value<int>(item.at("rank"), "rank", source),
                        item.value("host", std::string()),
                        item.value("lost_unix_s", 0.0),
                        item.value("why", std::string()),
                        whole_or<std::int64_t>(item, "tiles_held", 0, source),
                        item.value("done_again", false),
                        {}};
    for (const auto& tile : item.value("tiles", json::array())) rank.tiles.push_back(tile.get<std::string>());
    lost.push_back(std::move(rank));
  }
  return lost;
}

std::vector<RasterFailureRecord> failures_from_json(const json& document, std::string_view source) {
  std::vector<RasterFailureRecord> failures;
  if (!document.contains("failed_rasters")) return failures;
  const auto& list = document.at("failed_rasters");
  const auto refuse = [&](const json& got) {
    return UsageError(fmt::format(
        "{}: not a valid summary: 'failed_rasters' must be a list of {{\"raster\": ..., \"error\": ...}}, got {}",
        source, quote_short(got.dump())));
  };
  if (!list.is_array()) throw refuse(list);
  for (const auto& item : list) {
    if (!item.is_object()) throw refuse(item);
    failures.push_back({item.at("raster").get<std::string>(), item.value("error", std::string())});
  }
  return failures;
}

}  // namespace

RankSummary lost_rank_summary(int rank, int world_size) {
  RankSummary lost;
  lost.rank = rank;
  lost.world_size = world_size;
  lost.status = RankStatus::kFailed;
  lost.error =
      "lost while the tiles ran; the run went on without it (on_rank_loss=continue), rank 0 doing again "
      "the tiles it held";
  return lost;
}

RankSummary rank_summary_from_json(std::string_view text, std::string_view source) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& error) {
    throw UsageError(
        fmt::format("{}: not a valid summary (broken JSON: {}); the rank may have died while "
                    "writing it",
                    source, error.what()));
  }
  try {
    const int schema = whole<int>(document, "schema", source);
    if (schema != kSummarySchema) {
      throw UsageError(
          fmt::format("{}: summary schema {} is not the {} this mgpr reads; use the mgpr-logs of "
                      "the version that ran the job",
                      source, schema, kSummarySchema));
    }
    RankSummary s;
    s.job_id = document.at("job_id").get<std::string>();
    s.step_id = document.at("step_id").get<std::string>();
    s.rank = whole<int>(document, "rank", source);
    s.world_size = whole<int>(document, "world_size", source);
    s.local_rank = whole<int>(document, "local_rank", source);
    s.host = document.at("host").get<std::string>();
    s.device = document.at("device").get<std::string>();
    s.gpu_name = document.at("gpu_name").get<std::string>();
    s.tiles = whole<std::int64_t>(document, "tiles", source);
    s.elapsed_s = document.at("elapsed_s").get<double>();
    s.model_s = document.at("model_s").get<double>();
    s.memory_avg_bytes = whole<std::int64_t>(document, "memory_avg_bytes", source);
    s.memory_peak_bytes = whole<std::int64_t>(document, "memory_peak_bytes", source);
    // Added within schema 1: absent from summaries written before them.
    s.batches = whole_or<std::int64_t>(document, "batches", 0, source);
    s.read_s = document.value("read_s", 0.0);
    s.data_wait_s = document.value("data_wait_s", 0.0);
    s.memory_total_bytes = whole_or<std::int64_t>(document, "memory_total_bytes", 0, source);
    s.memory_device_peak_bytes = whole_or<std::int64_t>(document, "memory_device_peak_bytes", 0, source);
    s.host_peak_bytes = whole_or<std::int64_t>(document, "host_peak_bytes", 0, source);
    s.writer_held_peak_tiles = whole_or<std::int64_t>(document, "writer_held_peak_tiles", 0, source);
    s.box_cap = whole_or<std::int64_t>(document, "box_cap", 0, source);
    s.tiles_at_box_cap = whole_or<std::int64_t>(document, "tiles_at_box_cap", 0, source);
    if (document.contains("store_requests")) {
      s.store_requests = document.at("store_requests").get<std::map<std::string, std::int64_t>>();
    }
    s.local_world_size = whole_or<int>(document, "local_world_size", 1, source);
    s.node_rank = whole_or<int>(document, "node_rank", 0, source);
    s.master_addr = document.value("master_addr", std::string());
    s.master_port = whole_or<int>(document, "master_port", 0, source);
    s.visible_devices = document.value("visible_devices", std::string());
    s.status = status_from_string(document.at("status").get<std::string>(), source);
    s.error = document.at("error").get<std::string>();
    s.warnings = document.at("warnings").get<std::vector<std::string>>();
    s.started_unix_s = document.value("started_unix_s", 0.0);
    s.timeline = timeline_from_json(document, source);
    s.outputs = document.value("outputs", std::vector<std::string>());
    s.failed_rasters = failures_from_json(document, source);
    s.lost_ranks = lost_ranks_from_json(document, source);
    s.class_names = document.value("class_names", std::vector<std::string>());
    s.model_card = document.value("model_card", std::string());
    return s;
  } catch (const json::exception& error) {
    throw UsageError(fmt::format("{}: not a valid summary: {}", source, error.what()));
  }
}

JobTotals total(std::span<const RankSummary> ranks) {
  JobTotals totals;
  for (const auto& rank : ranks) {
    ++totals.ranks;
    if (rank.status != RankStatus::kOk) ++totals.failed_ranks;
    totals.tiles += rank.tiles;
    totals.elapsed_s = std::max(totals.elapsed_s, rank.elapsed_s);
    totals.warnings += rank.warnings.size();
  }
  return totals;
}

std::string store_requests_line(std::span<const RankSummary> ranks) {
  std::map<std::string, std::int64_t> rows;
  std::int64_t requests = 0;
  std::int64_t tiles = 0;
  for (const auto& rank : ranks) {
    tiles += rank.tiles;
    for (const auto& [row, count] : rank.store_requests) {
      rows[row] += count;
      requests += count;
    }
  }
  if (requests == 0) return {};
  std::vector<std::pair<std::int64_t, std::string>> most;
  for (const auto& [row, count] : rows) most.emplace_back(-count, row);
  std::sort(most.begin(), most.end());
  std::vector<std::string> shown;
  for (const auto& [negated, row] : most) shown.push_back(fmt::format("{} {}", row, -negated));
  return fmt::format(
      "store: {} requests from {} ranks, {} a tile ({})", requests, ranks.size(),
      tiles > 0 ? fmt::format("{:.2f}", static_cast<double>(requests) / static_cast<double>(tiles)) : std::string("-"),
      fmt::join(shown, ", "));
}

std::string box_cap_message(std::int64_t tiles, std::int64_t cap) {
  return fmt::format(
      "{} tile{} hit the model's cap of {} boxes and may have lost objects: raise detections_per_img or use smaller "
      "tiles",
      tiles, tiles == 1 ? "" : "s", cap);
}

std::string box_cap_message(std::span<const RankSummary> ranks) {
  std::int64_t tiles = 0;
  std::int64_t cap = 0;
  for (const auto& rank : ranks) {
    tiles += rank.tiles_at_box_cap;
    cap = std::max(cap, rank.box_cap);
  }
  return tiles > 0 ? box_cap_message(tiles, cap) : std::string();
}

TimelineRecorder::TimelineRecorder(std::vector<TimelinePoint>& into, double spacing_s, std::size_t capacity)
    : points_(into), spacing_s_(spacing_s), capacity_(std::max<std::size_t>(capacity, 2)) {}

void TimelineRecorder::record(const TimelinePoint& point) {
  if (!points_.empty() && point.t_s - points_.back().t_s < spacing_s_) return;
  close(point);
}

void TimelineRecorder::close(const TimelinePoint& point) {
  if (!points_.empty() && point.t_s <= points_.back().t_s) {
    points_.back() = point;
    return;
  }
  if (points_.size() >= capacity_) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < points_.size(); i += 2) points_[kept++] = points_[i];
    points_.resize(kept);
    spacing_s_ *= 2;
  }
  points_.push_back(point);
}

std::vector<std::string> lost_rank_lines(std::span<const RankSummary> ranks) {
  std::vector<std::string> lines;
  for (const auto& rank : ranks) {
    for (const auto& lost : rank.lost_ranks) {
      std::string held = lost.tiles_held == 0
                             ? "it held no tile whose results had not come"
                             : fmt::format("it held {} tile(s) whose results had not come{}{}{}", lost.tiles_held,
                                           lost.done_again ? ", done again by the live ranks" : "",
                                           lost.tiles.empty() ? "" : ": ", fmt::join(lost.tiles, "; "));
      if (lost.tiles_held > static_cast<std::int64_t>(lost.tiles.size()) && !lost.tiles.empty()) held += "; …";
      const double after =
          rank.started_unix_s > 0 && lost.lost_unix_s > 0 ? lost.lost_unix_s - rank.started_unix_s : -1;
      lines.push_back(fmt::format("rank {}{} lost{}: {}; {}", lost.rank,
                                  lost.host.empty() ? "" : fmt::format(" on {}", lost.host),
                                  after >= 0 ? fmt::format(" {:.1f} s into the loop", after) : "", lost.why, held));
    }
  }
  return lines;
}

}  // namespace mgpr
