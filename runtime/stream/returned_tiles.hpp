#pragma once
// Under on_rank_loss=continue, on rank 0: the tiles a lost rank held whose results never
// came, which rank 0's writer hands to rank 0's own loop to do first (they hold back the
// rows after them, and every rank's pacing with them: distributed/lease_book.hpp names
// them); and the end of rank 0's loop, which waits until the writer wrote every row,
// since until then a rank may still be lost with tiles in hand. A lost rank holds a few
// leases: rank 0 does them again in a few batches, and no rank waits on another.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicator.hpp"
#include "geometry/tiler.hpp"

namespace mgpr::runtime {

class ReturnedTiles {
 public:
  // The writer's side.
  void add(const std::vector<Tile>& tiles);
  void all_written();  // every row written, or the writer failed: nothing more will come
  // Asked by rank 0's loop once every live rank finished: every tile still missing is
  // then lost (a rank lost between its claim and its book), and goes to add().
  [[nodiscard]] bool sweep_asked() const;
  void ask_sweep();

  // Called at every look of wait(), on the loop's thread: rank 0's loop asks for a
  // sweep there once every live rank finished.
  void on_idle(std::function<void()> idle) { idle_ = std::move(idle); }

  // The loop's side.
  // Every tile its feed handed out, and how many its pipeline finished (their results
  // with the writer): a sweep only once the two agree, or it would take the loop's own
  // tiles in flight for lost ones.
  void handed() { ++handed_; }
  void finished_up_to(std::int64_t tiles) { finished_ = tiles; }
  [[nodiscard]] bool nothing_in_flight() const { return handed_.load() == finished_.load(); }
  [[nodiscard]] bool waiting() const;  // a returned tile is there to take
  std::optional<Tile> take();
  // Once the loop's own feed ran out: the next returned tile, or nullopt once every row
  // was written or `give_up` (asked every look) says so.
  std::optional<Tile> wait(const std::function<bool()>& give_up);

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Tile> tiles_;
  bool all_written_ = false;
  bool sweep_asked_ = false;
  std::function<void()> idle_;
  std::atomic<std::int64_t> handed_{0};
  std::atomic<std::int64_t> finished_{0};
};

// Rank 0's loop under on_rank_loss=continue: asks for a sweep once every rank it has not
// lost says it finished (its counter under tiles/finished, which it adds to after its
// loop and its last results).
void sweep_once_all_finished(ReturnedTiles& returned, Communicator& communicator);
// The other ranks' side of it.
void say_finished(Communicator& communicator);

}  // namespace mgpr::runtime
