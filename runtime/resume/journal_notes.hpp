#pragma once
// What rank 0 says of the journal: before the rendezvous, the results of earlier runs it
// dropped (of rasters changed since, of tiles these inputs do not have); at the end,
// where the finished tiles of a run that did not finish are kept and what to do, or the
// journals removed once the outputs are complete.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "resume/run_journal.hpp"

namespace mgpr::runtime {

// On stderr.
void print_dropped_results(const RunJournal::DoneTiles& done, std::span<const std::string> rasters,
                           const std::filesystem::path& journal_folder);

// How the run ended, for rank 0's last lines.
struct RunEnd {
  std::vector<std::pair<std::string, std::string>> failed;  // the rasters not read: path, reason
  std::size_t rasters = 0;
  std::int64_t tiles_done = 0;
  std::size_t tiles = 0;
  bool stopped = false;
  std::vector<std::string> skipped;  // the tiles lost with two ranks, named
};

// After the usage summary: the rasters that could not be read and what to do about them,
// or that the run stopped with tiles left, and where the finished ones are kept.
void print_run_end(const RunEnd& end, const std::filesystem::path& journal_folder);

// The outputs are complete: the run's journal goes (one left behind would only make a
// rerun redo the writing), and those of earlier runs with other settings; said on stdout,
// what could not be removed on stderr.
void finish_journals(const RunJournal& journal);

}  // namespace mgpr::runtime
