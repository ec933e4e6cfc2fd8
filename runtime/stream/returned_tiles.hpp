#pragma once
// Under on_rank_loss=continue, on every rank: the tiles a lost rank held whose results
// never came, which rank 0's writer hands again (tile_dealer.hpp) and the rank's feed
// serves before its own (they hold back the rows after them, and every rank's pacing
// with them); and the end of the rank's loop, which waits until the writer wrote every
// row, since until then a rank may still be lost with tiles in hand.
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
  // The writer's side (or, on the other ranks, what rank 0 handed them).
  void add(const std::vector<Tile>& tiles);
  void all_written();  // every row written, or the writer failed: nothing more will come
  // Asked by rank 0's loop once every live rank finished and nothing handed is out:
  // every tile still missing is then lost (a rank lost between its claim and its book).
  // The writer takes the request.
  [[nodiscard]] bool take_sweep_request();
  void ask_sweep();
  // The dealer's word: nothing waits to be handed, nothing handed is out.
  void settled(bool settled) { settled_ = settled; }
  [[nodiscard]] bool settled() const { return settled_.load(); }

  // Called on the loop's threads while a tile waits for the writer (false) and at every
  // look of wait() (true, the rank's own feed ran out): where a rank looks for tiles
  // handed to it and says it finished, and rank 0's loop asks for a sweep.
  void on_idle(std::function<void(bool feed_ran_out)> idle) { idle_ = std::move(idle); }
  void look() const {
    if (idle_) idle_(false);
  }

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
  std::atomic<bool> settled_{true};
  std::function<void(bool)> idle_;
  std::atomic<std::int64_t> handed_{0};
  std::atomic<std::int64_t> finished_{0};
};

// Rank 0's loop under on_rank_loss=continue: asks for a sweep once every rank it has not
// lost says it finished (its counter under tiles/finished, which it adds to once its own
// feed ran out and its results were sent) and the dealer settled.
void sweep_once_all_finished(ReturnedTiles& returned, Communicator& communicator);
// The other ranks' side of it.
void say_finished(Communicator& communicator);

}  // namespace mgpr::runtime
