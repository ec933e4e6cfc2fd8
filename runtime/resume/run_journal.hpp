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

#include "resume/tile_journal.hpp"

namespace mgpr::runtime {

class RunJournal {
 public:
  // `folder`: the run's journal folder (journal_dir); `rasters`: the run's inputs, by
  // index, as the run plan froze them; `resume`: whether earlier runs' tiles count.
  RunJournal(std::filesystem::path folder, std::vector<std::string> rasters, bool resume);

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
  // journal when resume=false, else the lines of rasters changed since; then records each
  // raster's identity. Throws IoError naming what could not be removed.
  void begin() const;

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
};

}  // namespace mgpr::runtime
