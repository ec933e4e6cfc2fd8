#include "pipeline/progress_printer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace mgpr::runtime {
namespace {

std::string gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

std::string clock_duration(double seconds) {
  const auto whole = static_cast<std::int64_t>(std::max(0.0, seconds) + 0.5);
  const auto hours = whole / 3600;
  const auto minutes = whole / 60 % 60;
  const auto secs = whole % 60;
  return hours > 0 ? fmt::format("{}:{:02}:{:02}", hours, minutes, secs) : fmt::format("{}:{:02}", minutes, secs);
}

std::string progress_line(std::int64_t done, std::int64_t total, double elapsed_s) {
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  const auto eta =
      rate > 0 ? clock_duration(static_cast<double>(std::max<std::int64_t>(0, total - done)) / rate) : std::string("-");
  return fmt::format("{}/{} tiles {:>3.0f}%  {:.2f} tiles/s  ETA {}", done, total, 100 * fraction, rate, eta);
}

ProgressPrinter::ProgressPrinter(int rank, std::int64_t rank_share, std::int64_t run_tiles, int log_interval,
                                 bool terminal)
    : rank_(rank),
      rank_share_(std::max<std::int64_t>(1, rank_share)),
      run_tiles_(run_tiles),
      log_interval_(log_interval),
      terminal_(terminal) {}

void ProgressPrinter::update(const PipelineStats& stats, std::int64_t run_done) {
  if (terminal_) {
    if (rank_ != 0) return;
    // A few redraws a second: a fast CPU model finishes hundreds of batches a second.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_line_ < std::chrono::milliseconds(250)) return;
    last_line_ = now;
    // \x1b[K clears what a longer earlier line left to the right.
    fmt::print(stderr, "\rmgpr: {}\x1b[K",
               progress_line(run_done, run_tiles_, std::chrono::duration<double>(now - started_).count()));
    std::fflush(stderr);
    line_open_ = true;
    return;
  }
  if (log_interval_ > 0 && stats.batches % log_interval_ == 0) {
    const double rate = stats.elapsed_s > 0 ? static_cast<double>(stats.tiles) / stats.elapsed_s : 0;
    fmt::print("rank {}: batch {}, {} tiles (~{} expected), {:.2f} tiles/s, waited {:.1f} s for data{}\n", rank_,
               stats.batches, stats.tiles, rank_share_, rate, stats.data_wait_s,
               rank_ == 0 ? "; all ranks: " + progress_line(run_done, run_tiles_, stats.elapsed_s) : "");
    std::fflush(stdout);
  }
}

void ProgressPrinter::finish(const PipelineStats& stats) {
  if (line_open_) {
    fmt::print(stderr, "\n");
    line_open_ = false;
  }
  fmt::print("rank {}: done, {} tiles in {} batches, {:.2f} s ({:.2f} tiles/s)\n", rank_, stats.tiles, stats.batches,
             stats.elapsed_s, stats.elapsed_s > 0 ? static_cast<double>(stats.tiles) / stats.elapsed_s : 0);
  std::fflush(stdout);
}

void ProgressPrinter::run_finished(std::int64_t run_done) {
  if (!terminal_ || rank_ != 0) return;
  fmt::print(stderr, "mgpr: {}\n",
             progress_line(run_done, run_tiles_,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()));
  std::fflush(stderr);
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
  if (const auto store = store_requests_line(ranks); !store.empty()) text += fmt::format("  {}\n", store);
  if (const auto capped = box_cap_message(ranks); !capped.empty()) {
    text += fmt::format("  warning: {} (each rank's summary names them)\n", capped);
  }
  text += fmt::format("Prediction completed in {:.2f} seconds\n", job_elapsed_s);
  return text;
}

}  // namespace mgpr::runtime
