#pragma once
// The run's outputs written while its tiles still run. Every rank hands each batch's
// results, once journaled, to a ResultSink: rank 0 to its OutputStream, the others to a
// ResultMail that carries them to it through the run's store. The OutputStream holds
// the results of the rasters not yet written and writes each raster as soon as it is
// final (every one of its tiles done) and every raster before it was written, on a
// thread of its own, so that the tile loop goes on meanwhile, the files list the
// rasters in the same order whichever rank finished which tile, and no rank holds the
// run's results: what is held is bounded by the rasters in progress.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/store_mail.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

// On the ranks other than 0.
class ResultMail final : public ResultSink {
 public:
  explicit ResultMail(Communicator& communicator);
  void take(TileResults batch) override;

 private:
  MailToRank0 mail_;
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

  // Once every rank's loop ended and sent its last results (after a barrier): takes
  // them, writes every raster that became final, and stops the thread. Rethrows what the
  // writing threw (StoppedOnRequest for a stop that came during a long write).
  void drain();

  // After drain, every raster agreed on: those complete and not in `failed` are written
  // (the rest of those still held), then the run's files. Returns every file written.
  std::vector<std::filesystem::path> finish(const RasterFailures& failed);

 private:
  void run();
  void absorb(TileResults batch);
  // Writes the rasters from next_image_ on while each is final.
  void write_final_rasters();
  void write_raster(int image);

  TaskOutput& output_;
  Rank0Mailbox mailbox_;
  std::vector<std::int64_t> tiles_of_;    // per image: its tiles in the run
  std::vector<std::int64_t> received_;    // per image: its results held or written
  std::vector<std::int64_t> results_of_;  // per image: what write_raster returned
  TileResults held_;                      // the results of the rasters not yet written
  int next_image_ = 0;                    // the first raster not yet written
  std::vector<std::filesystem::path> written_;

  std::mutex mutex_;  // guards what follows, shared with the thread
  std::condition_variable wake_;
  std::vector<TileResults> incoming_;
  bool draining_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace mgpr::runtime
