#include "resume/journal_notes.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "mgpr/input_list.hpp"

namespace mgpr::runtime {

void print_dropped_results(const RunJournal::DoneTiles& done, std::span<const std::string> rasters,
                           const std::filesystem::path& journal_folder) {
  if (!done.changed_rasters.empty()) {
    const auto& example = rasters[static_cast<std::size_t>(done.changed_rasters.front())];
    fmt::print(stderr, "mgpr: {} raster(s) changed since the interrupted run (e.g. {}); their tiles are done again\n",
               done.changed_rasters.size(), redact_input(example));
  }
  if (done.foreign > 0) {
    fmt::print(stderr,
               "mgpr: warning: {} result(s) in the journal {} are for tiles these inputs do not have; they are "
               "ignored and those tiles computed again\n",
               done.foreign, journal_folder.string());
  }
}

void print_run_end(const RunEnd& end, const std::filesystem::path& journal_folder) {
  if (!end.failed.empty()) {
    fmt::print("# {} of {} rasters could not be read; the results of the others are written:\n", end.failed.size(),
               end.rasters);
    for (const auto& [path, reason] : end.failed) fmt::print("#   {}: {}\n", redact_input(path), reason);
    fmt::print(
        "# their finished tiles are kept in {}: fix or replace those rasters (same paths) and run the same "
        "command again to do only what is missing\n",
        journal_folder.string());
  }
  if (!end.skipped.empty()) {
    fmt::print(
        "# finished with {} tile(s) skipped, each lost with two ranks; the results of every other tile are "
        "written:\n",
        end.skipped.size());
    for (const auto& tile : end.skipped) fmt::print("#   {}\n", tile);
    fmt::print(
        "# the other tiles are kept in {}: a damaged block, or a tile too large for memory, may end whatever reads "
        "it; check those tiles, then run the same command again to do only them\n",
        journal_folder.string());
  }
  if (end.stopped) {
    fmt::print(
        "# stopped: {} of {} tiles are finished and kept in {}; run the same command again (a requeued "
        "job does so) to finish the rest\n",
        end.tiles_done, end.tiles, journal_folder.string());
  }
  std::fflush(stdout);
}

void finish_journals(const RunJournal& journal) {
  if (const auto not_removed = journal.finish(); !not_removed.empty()) {
    fmt::print(stderr, "mgpr: warning: could not remove the journal: {}\n", not_removed);
  }
  const auto earlier = journal.remove_earlier();
  for (const auto& folder : earlier.folders) {
    fmt::print("# removed the journal of an earlier run with other settings: {}\n", folder.string());
  }
  if (!earlier.failures.empty()) {
    fmt::print(stderr, "mgpr: warning: could not remove an earlier run's journal: {}\n", earlier.failures);
  }
}

}  // namespace mgpr::runtime
