#pragma once
// What people read while and after a run: a live line on a terminal (rank 0: the whole
// run's tiles done of all, tiles/s and ETA), a line every log_interval batches per rank
// otherwise (a log file keeps them), and rank 0's "GPU Usage Summary", grouped by host
// and device (the original indexed devices by rank, wrong on several nodes).
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "mgpr/summary.hpp"
#include "pipeline/pipeline.hpp"

namespace mgpr::runtime {

class ProgressPrinter {
 public:
  // `rank_share`: this rank's share, an estimate under dynamic sharding; `run_tiles`:
  // the tiles every rank together has to do in this run. `terminal`: stderr is one, and
  // the ranks of this machine share it: rank 0 draws the live line, the others keep
  // quiet until their "done" line.
  ProgressPrinter(int rank, std::int64_t rank_share, std::int64_t run_tiles, int log_interval, bool terminal);
  // `run_done`: the tiles every rank together has done so far.
  void update(const PipelineStats& stats, std::int64_t run_done);
  // This rank's loop ended.
  void finish(const PipelineStats& stats);
  // Every rank's loop ended (after the final gather): the live line's last state.
  void run_finished(std::int64_t run_done);

 private:
  int rank_;
  std::int64_t rank_share_;
  std::int64_t run_tiles_;
  int log_interval_;
  bool terminal_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_line_{};
  bool line_open_ = false;
};

// "312/1024 tiles  30%  12.40 tiles/s  ETA 0:57" (ETA "-" before any tile is done).
std::string progress_line(std::int64_t done, std::int64_t total, double elapsed_s);
// "0:57", "12:05", "3:02:11".
std::string clock_duration(double seconds);

// The block rank 0 prints at the end, from every rank's summary.
std::string usage_summary(std::span<const RankSummary> ranks, double job_elapsed_s);

}  // namespace mgpr::runtime
