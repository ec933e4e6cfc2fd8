#include "pipeline/progress_printer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace mgpr::runtime {
namespace {

std::string gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

ProgressPrinter::ProgressPrinter(int rank, std::int64_t expected_tiles, int log_interval, bool terminal)
    : rank_(rank),
      expected_tiles_(std::max<std::int64_t>(1, expected_tiles)),
      log_interval_(log_interval),
      terminal_(terminal && rank == 0) {}

void ProgressPrinter::update(const PipelineStats& stats) {
  const double rate = stats.elapsed_s > 0 ? static_cast<double>(stats.tiles) / stats.elapsed_s : 0;
  if (terminal_) {
    const double done = std::min(1.0, static_cast<double>(stats.tiles) / static_cast<double>(expected_tiles_));
    const int width = 30;
    const int filled = static_cast<int>(done * width);
    fmt::print(stderr, "\rrank 0 [{}{}] {:>3.0f}% {} tiles {:.2f} tiles/s", std::string(filled, '#'),
               std::string(width - filled, '.'), 100 * done, stats.tiles, rate);
    std::fflush(stderr);
    return;
  }
  if (log_interval_ > 0 && stats.batches % log_interval_ == 0) {
    fmt::print("rank {}: batch {}, {} tiles (~{} expected), {:.2f} tiles/s, waited {:.1f} s for data\n", rank_,
               stats.batches, stats.tiles, expected_tiles_, rate, stats.data_wait_s);
    std::fflush(stdout);
  }
}

void ProgressPrinter::finish(const PipelineStats& stats) {
  if (terminal_) fmt::print(stderr, "\n");
  fmt::print("rank {}: done, {} tiles in {} batches, {:.2f} s ({:.2f} tiles/s)\n", rank_, stats.tiles, stats.batches,
             stats.elapsed_s, stats.elapsed_s > 0 ? static_cast<double>(stats.tiles) / stats.elapsed_s : 0);
  std::fflush(stdout);
}

std::string usage_summary(std::span<const RankSummary> ranks, double job_elapsed_s) {
  // host -> device -> ranks on it
  std::map<std::tuple<std::string, std::string>, std::vector<const RankSummary*>> groups;
  for (const auto& rank : ranks) groups[{rank.host, rank.device}].push_back(&rank);
  std::string text = "\nGPU Usage Summary\n";
  for (const auto& [where, members] : groups) {
    const auto& [host, device] = where;
    const auto& first = *members.front();
    text += fmt::format("  {} {}{}\n", host, device, first.gpu_name.empty() ? "" : " (" + first.gpu_name + ")");
    for (const auto* r : members) {
      text += fmt::format(
          "    rank {:>3}: {:>6} tiles {:>8.2f} tiles/s  busy {:>5.1f}%  waited {:>6.2f} s  memory avg "
          "{} peak {}{}{}  {}\n",
          r->rank, r->tiles, r->tiles_per_s(), r->busy_percent(), r->data_wait_s, gib(r->memory_avg_bytes),
          gib(r->memory_peak_bytes),
          r->memory_device_peak_bytes > 0 ? ", card " + gib(r->memory_device_peak_bytes) : std::string(),
          r->memory_total_bytes > 0 ? " of " + gib(r->memory_total_bytes) : std::string(), to_string(r->status));
    }
  }
  const auto totals = total(ranks);
  text += fmt::format("  total: {} tiles on {} ranks, {:.2f} tiles/s\n", totals.tiles, totals.ranks,
                      job_elapsed_s > 0 ? static_cast<double>(totals.tiles) / job_elapsed_s : 0);
  text += fmt::format("Prediction completed in {:.2f} seconds\n", job_elapsed_s);
  return text;
}

}  // namespace mgpr::runtime
