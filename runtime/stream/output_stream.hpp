#pragma once
// The run's outputs written while its tiles still run. Every rank hands each batch's
// results, once journaled, to a ResultSink: the writer's rank (rank 0, writer_layout.hpp)
// to its OutputStream, the others to a ResultMail that carries them to it through the
// run's store (store_mail.hpp), paced by what it wrote (writer_pace.hpp). The OutputStream holds
// the results not yet written and writes each row of a raster's tiles as soon as it is
// final (every one of its tiles done) and every row before it was written, rasters in
// order, on a thread of its own: the tile loop goes on meanwhile, the files are the same
// whichever rank finished which tile, and no rank holds the run's results: what is held
// is bounded by the rows in progress (and what the tasks hold back of them: boxes near
// the next row, task=detect).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "distributed/lease_book.hpp"
#include "mgpr/summary.hpp"
#include "stream/returned_tiles.hpp"
#include "stream/store_mail.hpp"
#include "stream/tile_dealer.hpp"
#include "stream/writer_layout.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

// On the ranks other than the writer's. Batches travel together: a message goes when
// kMailTiles results are waiting, or the first of them has waited kMailAge (a thread of
// its own sends it, so results never wait for the rank's next batch, which the writer's
// pacing may hold back until they arrive), or at flush.
class ResultMail final : public ResultSink {
 public:
  // `book`, when given, learns of every result sent and raster failed (lease_book.hpp).
  ResultMail(Communicator& communicator, int writer, LeaseBook* book = nullptr);
  ~ResultMail() override;
  ResultMail(const ResultMail&) = delete;
  ResultMail& operator=(const ResultMail&) = delete;
  void take(TileResults batch) override;
  void raster_failed(int image, const std::string& reason) override;
  void flush() override;
  // The tile's results go as soon as they come, not with the next full message: a tile
  // rank 0 handed again (tile_dealer.hpp), which the writer's rows wait for.
  void hurry(const TileId& tile);

 private:
  void send_waiting(std::unique_lock<std::mutex>& lock);
  void send_old(const std::stop_token& stop);

  std::mutex mail_mutex_;  // guards mail_ and what waits for it
  std::condition_variable_any wake_;
  MailToWriter mail_;
  LeaseBook* book_;
  TileResults waiting_;  // results not yet sent
  std::set<TileId> urgent_;
  std::chrono::steady_clock::time_point waiting_since_{};
  std::exception_ptr send_failure_;  // the sending thread's, thrown on the rank's next take or flush
  std::mutex failures_mutex_;        // reader threads may fail rasters at once
  MailToWriter failures_;
  std::jthread sender_;  // last: started once everything above is set
};

// What the writer keeps for its rank's summary however the loop ends: written on the
// writing thread, read once the stream is destroyed or drained.
struct WriterRecord {
  // held_peak_tiles() whenever it grows.
  std::int64_t* held_peak_tiles = nullptr;
  // Once the run lost a rank, a line for each lost rank that held tiles whose results
  // had not come (lease_book.hpp), naming them: a tile named after two losses may be
  // what kills ranks.
  std::vector<std::string>* lost_rank_tiles = nullptr;
  // A record of each rank the run lost: when, why, the tiles it held.
  std::vector<LostRankRecord>* lost_ranks = nullptr;
  // The tile list the feed handed out, which the ranks' books index.
  std::span<const Tile> run_tiles;
  // on_rank_loss=continue: where the dealer (tile_dealer.hpp) says whether it is settled
  // and returns a lost rank's tiles for rank 0's loop once no other rank lives, and the
  // writer says when every row was written (returned_tiles.hpp).
  ReturnedTiles* returned = nullptr;
};

// On the writer's rank.
class OutputStream final : public ResultSink {
 public:
  // `earlier`: the results of earlier runs (resume), written as their rasters become final.
  OutputStream(TaskOutput& output, TileResults earlier, Communicator& communicator, int writer,
               WriterRecord record = {});
  // Stops the writing thread; the run's files not finished are not made.
  ~OutputStream() override;
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  // The writer's rank's own results.
  void take(TileResults batch) override;
  // A raster the writer's rank could not read (the other ranks' come by mail): what is held of it is
  // dropped, what comes later too, and the rows after it no longer wait for it.
  void raster_failed(int image, const std::string& reason) override;

  // Once every rank's loop ended and sent its last results (after a barrier): takes
  // them, writes every raster that became final, and stops the thread. Rethrows what the
  // writing threw (StoppedOnRequest for a stop that came during a long write).
  void drain();

  // After drain, every raster agreed on: those complete and not in `failed` are written
  // (the rest of those still held), then the run's files. Returns every file written.
  std::vector<std::filesystem::path> finish(const RasterFailures& failed);

  // The most tiles whose results were held unwritten at once (earlier runs' included):
  // bounded by the pacing while every rank lives; the rank's summary keeps it, so a run
  // that lost a rank shows whether results piled up here. Any thread, any time.
  [[nodiscard]] std::int64_t held_peak_tiles() const { return held_peak_.load(); }

  // After drain: per image (TileId::image), the tiles with a result, less those of
  // earlier runs (`earlier`, per image).
  [[nodiscard]] std::map<int, std::int64_t> tiles_received(std::span<const std::int64_t> earlier) const;
  // After drain: the tiles skipped, lost with two ranks (tile_dealer.hpp).
  [[nodiscard]] const std::vector<Tile>& skipped_tiles() const { return dealer_.skipped(); }

 private:
  void run();
  void receive_all_mail();
  // Every result sent so far, the rank's own included: the dealer's catch_up.
  void catch_up();
  // A tile lost with two ranks: its row goes on without its results.
  void skip(const Tile& tile);
  void release_ranks();
  void absorb(TileResults batch);
  void mark_failed(int image);
  // Writes the rows from the next one on while each is final, passing over failed rasters.
  void write_final_rows();
  void write_next_row();
  // The next raster failed: its own files are abandoned (rows already in the run's files
  // stay) and its tiles not written are counted as written, for the pacing.
  void abandon_next_raster();
  // The tiles written (or passed over) since the last call, counted on the store for the
  // ranks' pacing: once a wake of the writer, not once a row (a request a tile for rasters
  // of one tile a row).
  void publish_written();

  // One row of a raster's tiles.
  struct Row {
    int row = 0;
    std::int64_t tiles = 0;     // in the run
    std::int64_t received = 0;  // results held or written
  };
  [[nodiscard]] bool written_already(const TileId& id) const;
  [[nodiscard]] bool received(const TileId& id) const;

  TaskOutput& output_;
  Communicator& communicator_;
  int writer_;
  WriterMailbox mailbox_;
  WriterMailbox failure_mailbox_;
  std::vector<std::vector<Row>> rows_;      // per image, in order
  std::vector<std::int64_t> results_of_;    // per image: what write_row returned, added up
  TileResults held_;                        // the results not yet written
  std::atomic<std::int64_t> held_peak_{0};  // held_'s largest size (only the writing thread stores)
  WriterRecord record_;
  std::set<int> failed_;        // rasters some rank could not read, as learnt
  std::size_t next_image_ = 0;  // the first raster not wholly written
  std::size_t next_row_ = 0;    // its first row not written (index into rows_)
  std::int64_t uncounted_ = 0;  // tiles written, not yet counted on the store
  std::chrono::steady_clock::time_point next_failure_poll_{};
  std::chrono::steady_clock::time_point next_mail_poll_{};
  std::vector<std::filesystem::path> written_;
  std::set<TileId> skipped_;  // skip()'s tiles, counted as received in their rows
  [[nodiscard]] std::int64_t skipped_of(std::size_t image) const;
  TileDealer dealer_;

  std::mutex mutex_;  // guards what follows, shared with the thread
  std::condition_variable wake_;
  std::vector<TileResults> incoming_;
  std::vector<int> incoming_failures_;
  bool draining_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace mgpr::runtime
