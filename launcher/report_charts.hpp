#pragma once
// The job report's drawings, as inline SVG the program writes itself (no JavaScript, no
// fetches): a timeline with a row per rank (per host for many ranks), and throughput per
// host and device.
#include <span>
#include <string>
#include <string_view>

#include "mgpr/summary.hpp"

namespace mgpr::launcher {

// Text safe inside HTML and SVG, element content or a quoted attribute: &<>"' escaped,
// control bytes other than line breaks shown as \xHH (printable()).
std::string html_text(std::string_view text);

// A row per rank on one time axis (started_unix_s aligns hosts), a row per host beyond
// kRankRowsUpTo ranks (timeline_rows.hpp): bars as tall as the
// rank's tiles/s in each interval, an orange strip where it waited for data, hatching
// where no tile finished for a long time (a stall), and a mark where it ended: done,
// stopped or failed (with the error as the mark's tooltip). Empty when no rank has a
// timeline (summaries of an mgpr older than it).
std::string timeline_svg(std::span<const RankSummary> ranks);

// The longest interval in which a rank finished no tile that still counts as normal:
// longer is drawn as a stall. Several times the typical interval between its points,
// and never under 5 s.
double stall_threshold_s(const RankSummary& rank);

// Horizontal bars of tiles/s per host and device (the sum of its ranks).
std::string throughput_svg(std::span<const RankSummary> ranks);

}  // namespace mgpr::launcher
