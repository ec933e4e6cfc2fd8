#include "resume/run_journal.hpp"

#include <fmt/format.h>

#include <utility>

#include "mgpr/error.hpp"

namespace mgpr::runtime {

RunJournal::RunJournal(std::filesystem::path folder, std::vector<std::string> rasters, bool resume)
    : folder_(std::move(folder)), rasters_(std::move(rasters)), resume_(resume) {}

RunJournal::DoneTiles RunJournal::done_tiles(std::span<const Tile> tiles) const {
  DoneTiles done;
  if (!resume_) return done;
  done.results = read_journals(folder_);
  done.changed_rasters = drop_results_of_changed_rasters(done.results, folder_, rasters_);
  done.foreign = keep_results_of(done.results, tiles);
  return done;
}

void RunJournal::begin() const {
  if (!resume_) {
    if (const auto failed = remove_journals(folder_); !failed.empty()) {
      throw IoError(
          fmt::format("resume=false: cannot remove the earlier run's journal ({}); remove it by hand", failed));
    }
  }
  // The results of rasters changed since they were journaled go before the new identities
  // are recorded: stopped in between, the next run still sees the change.
  TileResults none;
  const auto changed = drop_results_of_changed_rasters(none, folder_, rasters_);
  if (const auto failed = forget_rasters(folder_, changed); !failed.empty()) {
    throw IoError(fmt::format("cannot drop the results of changed rasters from the journal ({}); remove {} by hand",
                              failed, folder_.string()));
  }
  record_raster_identities(folder_, rasters_);
}

}  // namespace mgpr::runtime
