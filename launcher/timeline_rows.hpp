#pragma once
// The timeline's rows: a row per rank while a page can show them one under another, a row
// per host beyond. At 256 ranks a row each is thousands of pixels of near-identical
// stripes and megabytes of SVG; a host's row, its ranks' tiles added on one time axis,
// keeps the picture a page tall and still shows which node was slow, waited or failed.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "mgpr/summary.hpp"

namespace mgpr::launcher {

// Up to this many ranks the timeline has a row per rank.
inline constexpr std::size_t kRankRowsUpTo = 32;

struct TimelineRow {
  std::string label;     // "rank 3 · node1 · cuda:1", or "node1 · 8 ranks (8–15)"
  RankSummary activity;  // the rank's summary, or the host's ranks combined (timeline, status, error)
};

// A row per rank (ranks.size() <= kRankRowsUpTo), else a row per host in the order of its
// first rank. A host's timeline is its ranks' added at `points` moments over its span
// (tiles and data waits summed, the waits divided by its rank count, so a row's waiting
// share stays a share); it ends where its last rank ended; its status is its worst rank's
// (failed, then stopped), with that rank's error.
std::vector<TimelineRow> timeline_rows(std::span<const RankSummary> ranks, std::size_t points = 160);

}  // namespace mgpr::launcher
