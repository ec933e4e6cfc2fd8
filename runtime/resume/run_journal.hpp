#pragma once
// The resume protocol over one run's journal folder, in the order a run meets it: every
// rank reads what earlier runs of the job finished (open → done tiles); rank 0 begins the
// run once every rank has read (an earlier run's journal removed when resume=false, each
// raster's identity recorded); each rank appends its finished tiles to a file of its own
// (TileJournal); rank 0 finishes the run once its outputs are complete (the folder goes).
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "resume/journal_record.hpp"
#include "resume/tile_journal.hpp"

namespace mgpr::runtime {

// What the run's journal folder records and where an older mgpr kept the same run's.
struct JournalOrigin {
  // The record written beside the journals (journal_record.hpp's record_text); none: the
  // folder records nothing.
  std::string record;
  // The same run's folder as an mgpr that recorded no settings named it
  // (legacy_journal_dir); empty: none looked for.
  std::filesystem::path legacy_folder;
};

class RunJournal {
 public:
  // `folder`: the run's journal folder (journal_dir); `rasters`: the run's inputs, by
  // index, as the run plan froze them; `resume`: whether earlier runs' tiles count.
  // Where `folder` does not exist and `origin`'s legacy folder does, without a record,
  // the run resumes that one: the settings its key left out (min_area, the precision auto
  // became, the classifier's content) cannot be compared, only those it held.
  RunJournal(std::filesystem::path folder, std::vector<std::string> rasters, bool resume, JournalOrigin origin = {});

  // What earlier runs finished that this run keeps.
  struct DoneTiles {
    TileResults results;
    std::vector<int> changed_rasters;  // rewritten since: their tiles are done again
    std::size_t foreign = 0;           // results for tiles `tiles` does not have, dropped
  };
  // Every rank, before the rendezvous: the tiles of `tiles` earlier runs finished (none
  // when resume=false), without the results of rasters changed since or of tiles the run
  // does not have.
  [[nodiscard]] DoneTiles done_tiles(std::span<const Tile> tiles) const;

  // Rank 0, once every rank has read and none appends yet: removes an earlier run's
  // journal when resume=false, else takes over a legacy folder (renamed to `folder`) and
  // drops the lines of rasters changed since; then writes the record and each raster's
  // identity. Throws IoError naming what could not be removed or renamed.
  void begin() const;

  // Rank 0, after begin(): what a person should read about earlier runs' journals in
  // this output folder, a line each: why the newest one with other settings is not
  // resumed (the settings that differ) when this run starts afresh, a legacy journal
  // taken over, the others kept. Empty when there is nothing to say or resume=false.
  [[nodiscard]] std::vector<std::string> notes() const;

  // Rank 0, once this run's outputs are complete: removes the journals of earlier runs
  // with other settings beside this one's. The outputs in this folder are this run's now
  // (task=segment's pieces, which those journals name, rewritten), so resuming one of
  // them would mix results. Returns the folders removed and what could not be, for a
  // line each.
  struct Removed {
    std::vector<std::filesystem::path> folders;
    std::string failures;
  };
  [[nodiscard]] Removed remove_earlier() const;

  // The journal this rank appends its finished tiles to.
  [[nodiscard]] TileJournal for_rank(int rank) const { return TileJournal(folder_, rank); }

  // Rank 0, once the outputs are complete: removes the run's journal. Returns what could
  // not be removed, empty when all went.
  [[nodiscard]] std::string finish() const { return remove_journals(folder_); }

  [[nodiscard]] const std::filesystem::path& folder() const { return folder_; }

 private:
  std::filesystem::path folder_;
  std::vector<std::string> rasters_;
  bool resume_;
  JournalOrigin origin_;
  // The folder earlier runs' tiles are read from: folder_, or a legacy folder taken over;
  // empty when neither exists (a fresh start).
  std::filesystem::path resumed_from_;
  // Earlier journals written after this are another run's, at the same time: kept.
  std::filesystem::file_time_type started_;
};

}  // namespace mgpr::runtime
