#pragma once
// What people read while and after a run: per-rank progress (a bar on a terminal, a
// line every log_interval batches otherwise) and rank 0's "GPU Usage Summary", grouped
// by host and device (the original indexed devices by rank, wrong on several nodes).
#include <cstdint>
#include <span>
#include <string>

#include "mgpr/summary.hpp"
#include "pipeline/pipeline.hpp"

namespace mgpr::runtime {

class ProgressPrinter {
 public:
  // `expected_tiles`: this rank's share, an estimate under dynamic sharding.
  ProgressPrinter(int rank, std::int64_t expected_tiles, int log_interval, bool terminal);
  void update(const PipelineStats& stats);
  void finish(const PipelineStats& stats);

 private:
  int rank_;
  std::int64_t expected_tiles_;
  int log_interval_;
  bool terminal_;
};

// The block rank 0 prints at the end, from every rank's summary.
std::string usage_summary(std::span<const RankSummary> ranks, double job_elapsed_s);

}  // namespace mgpr::runtime
