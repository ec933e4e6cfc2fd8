#include "resume/run_journal.hpp"

#include <fmt/format.h>

#include <utility>

#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"

namespace mgpr::runtime {
namespace {

// A folder name a line can hold: the fingerprint, not the whole path, for the others.
std::string folder_names(std::span<const EarlierJournal> journals) {
  std::string names;
  for (const auto& journal : journals) {
    names +=
        fmt::format("{}{} ({} tiles)", names.empty() ? "" : ", ", journal.folder.filename().string(), journal.tiles);
  }
  return names;
}

}  // namespace

RunJournal::RunJournal(std::filesystem::path folder, std::vector<std::string> rasters, bool resume,
                       JournalOrigin origin)
    : folder_(std::move(folder)),
      rasters_(std::move(rasters)),
      resume_(resume),
      origin_(std::move(origin)),
      started_(std::filesystem::file_time_type::clock::now()) {
  std::error_code error;
  const auto& legacy = origin_.legacy_folder;
  if (std::filesystem::is_directory(folder_, error)) {
    resumed_from_ = folder_;
  } else if (!legacy.empty() && legacy != folder_ && std::filesystem::is_directory(legacy, error) &&
             !std::filesystem::exists(legacy / kSettingsRecord, error)) {
    resumed_from_ = legacy;
  }
}

RunJournal::DoneTiles RunJournal::done_tiles(std::span<const Tile> tiles) const {
  DoneTiles done;
  if (!resume_ || resumed_from_.empty()) return done;
  done.results = read_journals(resumed_from_);
  done.changed_rasters = drop_results_of_changed_rasters(done.results, resumed_from_, rasters_);
  done.foreign = keep_results_of(done.results, tiles);
  return done;
}

void RunJournal::begin() const {
  if (!resume_) {
    if (const auto failed = remove_journals(folder_); !failed.empty()) {
      throw IoError(
          fmt::format("resume=false: cannot remove the earlier run's journal ({}); remove it by hand", failed));
    }
  } else if (!resumed_from_.empty() && resumed_from_ != folder_) {
    // A legacy folder becomes this run's: its record written below, it is found by name.
    std::error_code error;
    std::filesystem::rename(resumed_from_, folder_, error);
    if (error) {
      throw IoError(fmt::format("cannot rename the earlier run's journal {} to {} ({}); rename it by hand",
                                resumed_from_.string(), folder_.string(), error.message()));
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
  if (!origin_.record.empty()) write_file_atomically(folder_ / kSettingsRecord, origin_.record);
}

std::vector<std::string> RunJournal::notes() const {
  if (!resume_) return {};
  std::vector<std::string> lines;
  auto earlier = earlier_journals(folder_);
  if (resumed_from_.empty() && !earlier.empty()) {
    const auto& newest = earlier.front();
    const auto why = newest.record ? describe_changes(*newest.record, parse_record(origin_.record))
                                   : std::string("its settings were not recorded (an older mgpr's journal)");
    lines.push_back(fmt::format(
        "not resuming the earlier run in this folder ({} tiles journaled): {}; starting afresh (its journal is kept "
        "at {} until this run's outputs are complete)",
        newest.tiles, why, newest.folder.string()));
    earlier.erase(earlier.begin());
  } else if (!resumed_from_.empty() && resumed_from_ != folder_) {
    lines.emplace_back(
        "the earlier run's journal was written by an mgpr that recorded no settings: it is resumed on the settings "
        "its key held; min_area, the precision precision=auto became and the crop classifier's content were not "
        "among them, so if one of those changed since, run again with resume=false");
  }
  if (!earlier.empty()) {
    lines.push_back(fmt::format(
        "{} journal folder(s) of earlier runs with other settings are kept in {} until this run's outputs are "
        "complete: {}",
        earlier.size(), folder_.parent_path().string(), folder_names(earlier)));
  }
  return lines;
}

RunJournal::Removed RunJournal::remove_earlier() const {
  Removed removed;
  for (const auto& journal : earlier_journals(folder_)) {
    // Written since this run began: another run on this output folder at the same time.
    if (journal.written >= started_) continue;
    const auto failed = remove_journals(journal.folder);
    if (failed.empty()) {
      removed.folders.push_back(journal.folder);
    } else {
      removed.failures += failed;
    }
  }
  return removed;
}

}  // namespace mgpr::runtime
