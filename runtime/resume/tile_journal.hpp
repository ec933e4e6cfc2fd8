#pragma once
// Resume after requeue or interruption: each rank appends one line per finished tile
// (its id and its result, encoded by the task) to a journal of its own, written out
// after every batch. A later run of the same job on the same output reads every rank's
// journal, skips those tiles and still writes complete outputs. A line cut short by a
// kill is ignored: that tile is simply processed again.
#include <chrono>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geometry/tiler.hpp"
#include "resume/journal_record.hpp"

namespace mgpr::runtime {

// Finished tiles and their encoded results (payloads never contain a newline).
using TileResults = std::map<TileId, std::string>;

// What identifies a run's results: the resolved value of everything that changes a
// tile's result (the configuration's key table declares which keys do, mgpr/config.hpp;
// app/run_plan.cpp resolves them) and the rasters. A run with other settings on the same
// output_dir therefore never reuses these results.
struct JournalKey {
  std::filesystem::path output_dir;
  std::vector<RecordedSetting> settings;
  // The rasters by path only: one raster replaced among thousands must not cost the
  // others' results. Each raster's identity is kept in the journal instead
  // (record_raster_identities), and only a changed raster's results are dropped.
  std::vector<std::string> rasters;
};

// Where a run's journals live: <output_dir>/.mgpr-journal/<fingerprint of the key's
// record (journal_record.hpp), which the folder holds beside the journals>.
std::filesystem::path journal_dir(const JournalKey& key);

// The key as mgpr wrote it before journal folders recorded their settings: one line of
// hand-picked settings (precision as typed, no min_area), the model and libraries by
// path, size and modification time, the classifier by path. Only to find a journal such
// an mgpr left, which a run with the same key takes over (resume/run_journal.hpp).
struct LegacyJournalKey {
  std::filesystem::path output_dir;
  std::string settings;
  std::string model;
  std::vector<std::string> libraries;
  std::vector<std::string> rasters;
};
std::filesystem::path legacy_journal_dir(const LegacyJournalKey& key);

class TileJournal {
 public:
  // Opens <dir>/rank-<rank>.tiles for appending, creating folders as needed. Throws
  // std::runtime_error naming the file.
  TileJournal(const std::filesystem::path& dir, int rank);
  ~TileJournal();
  TileJournal(const TileJournal&) = delete;
  TileJournal& operator=(const TileJournal&) = delete;

  void append(const TileId& id, std::string_view payload);
  // Hands what was appended to the kernel, so it survives this process being killed;
  // syncs it to disk (fdatasync) at most once a second, and on destruction.
  void flush();

 private:
  int fd_ = -1;
  std::filesystem::path file_;
  std::string pending_;
  std::chrono::steady_clock::time_point last_sync_{};
};

// The journal's line format, also how results travel between ranks: "<image> <row>
// <column>\t<payload>\n". Parsing keeps only complete, well-formed lines.
std::string format_result_line(const TileId& id, std::string_view payload);
void parse_result_lines(std::string_view text, TileResults& into);

// Every complete line of every rank's journal in `dir` (none when it does not exist).
TileResults read_journals(const std::filesystem::path& dir);

// Drops the results of tiles that `tiles` does not have (a hand-edited or damaged
// journal) and returns how many went. Trusted, one would make a run look complete when
// it is not, or never complete (exit 3, requeued, forever).
std::size_t keep_results_of(TileResults& results, std::span<const Tile> tiles);

// Records each raster's identity (absolute path, size, modification time), by index, in
// `dir` (created when missing); rank 0 does it once every rank has read the journals.
void record_raster_identities(const std::filesystem::path& dir, std::span<const std::string> rasters);

// Drops the results of rasters whose identity differs from the one recorded in `dir`
// (rewritten, replaced after a failure) and returns their indices, ascending. Nothing
// is dropped for a raster with no record.
std::vector<int> drop_results_of_changed_rasters(TileResults& results, const std::filesystem::path& dir,
                                                 std::span<const std::string> rasters);

// Removes every line of rasters `images` from the rank journals in `dir`, each file
// replaced whole once its new content is written. For rasters changed since they were
// journaled: were the lines kept, a later resume would find them again once the new
// identity is recorded, and the first result of a tile wins. Returns what could not be
// rewritten, empty when all was.
std::string forget_rasters(const std::filesystem::path& dir, std::span<const int> images);

// Deletes `dir` (one run's journals: plain files, no subfolders) and its parent
// .mgpr-journal when no other run's journals are left there. Returns what could not be
// removed, empty when all went (or nothing was there). POSIX calls rather than
// std::filesystem::remove_all, which crashed (a call through a null pointer) in the
// build against PyTorch 2.11's wheel on the GPU machine.
std::string remove_journals(const std::filesystem::path& dir);

}  // namespace mgpr::runtime
