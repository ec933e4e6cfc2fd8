#pragma once
// The run's outputs written while its tiles still run. Every rank hands each batch's
// results, once journaled, to a ResultSink: rank 0 to its OutputStream, the others to a
// ResultMail that carries them to it through the run's store. The OutputStream holds
// the results not yet written and writes each row of a raster's tiles as soon as it is
// final (every one of its tiles done) and every row before it was written, rasters in
// order, on a thread of its own: the tile loop goes on meanwhile, the files are the same
// whichever rank finished which tile, and no rank holds the run's results: what is held
// is bounded by the rows in progress (and what the tasks hold back of them: boxes near
// the next row, task=detect).
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "distributed/store_mail.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

// The store's counter of the run's tiles (in id order, earlier runs' included) whose
// rows rank 0 has written: the tile loop starts no tile more than kUnwrittenTiles (or
// more, tile_loop.cpp) beyond it, so the results waiting for rank 0's writer stay
// bounded however slow it is. The writing left after the last tile is at most that
// many tiles': 256 tiles of 256 boxes are about 1 s of the writer measured
// (docs/benchmarks.md); 512 left 2.2 s, and the job took no less time.
inline constexpr const char* kTilesWrittenKey = "mgpr/tiles-written";
inline constexpr std::int64_t kUnwrittenTiles = 256;
// Added to that count when rank 0's writer fails: no tile of any run is that far ahead.
inline constexpr std::int64_t kReleasedCount = std::int64_t{1} << 50;

// On the ranks other than 0.
class ResultMail final : public ResultSink {
 public:
  explicit ResultMail(Communicator& communicator);
  void take(TileResults batch) override;
  void raster_failed(int image, const std::string& reason) override;

 private:
  MailToRank0 mail_;
  std::mutex failures_mutex_;  // reader threads may fail rasters at once
  MailToRank0 failures_;
};

// On rank 0.
class OutputStream final : public ResultSink {
 public:
  // `earlier`: the results of earlier runs (resume), written as their rasters become final.
  OutputStream(TaskOutput& output, TileResults earlier, Communicator& communicator);
  // Stops the writing thread; the run's files not finished are not made.
  ~OutputStream() override;
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  // Rank 0's own results.
  void take(TileResults batch) override;
  // A raster rank 0 could not read (the other ranks' come by mail): what is held of it is
  // dropped, what comes later too, and the rows after it no longer wait for it.
  void raster_failed(int image, const std::string& reason) override;

  // Once every rank's loop ended and sent its last results (after a barrier): takes
  // them, writes every raster that became final, and stops the thread. Rethrows what the
  // writing threw (StoppedOnRequest for a stop that came during a long write).
  void drain();

  // After drain, every raster agreed on: those complete and not in `failed` are written
  // (the rest of those still held), then the run's files. Returns every file written.
  std::vector<std::filesystem::path> finish(const RasterFailures& failed);

 private:
  void run();
  void release_ranks();
  void absorb(TileResults batch);
  void mark_failed(int image);
  // Writes the rows from the next one on while each is final, passing over failed rasters.
  void write_final_rows();
  void write_next_row();
  // The next raster failed: its own files are abandoned (rows already in the run's files
  // stay) and its tiles not written are counted as written, for the pacing.
  void abandon_next_raster();

  // One row of a raster's tiles.
  struct Row {
    int row = 0;
    std::int64_t tiles = 0;     // in the run
    std::int64_t received = 0;  // results held or written
  };
  [[nodiscard]] bool written_already(const TileId& id) const;

  TaskOutput& output_;
  Communicator& communicator_;
  Rank0Mailbox mailbox_;
  Rank0Mailbox failure_mailbox_;
  std::vector<std::vector<Row>> rows_;    // per image, in order
  std::vector<std::int64_t> results_of_;  // per image: what write_row returned, added up
  TileResults held_;                      // the results not yet written
  std::set<int> failed_;                  // rasters some rank could not read, as learnt
  std::size_t next_image_ = 0;            // the first raster not wholly written
  std::size_t next_row_ = 0;              // its first row not written (index into rows_)
  std::vector<std::filesystem::path> written_;

  std::mutex mutex_;  // guards what follows, shared with the thread
  std::condition_variable wake_;
  std::vector<TileResults> incoming_;
  std::vector<int> incoming_failures_;
  bool draining_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace mgpr::runtime
