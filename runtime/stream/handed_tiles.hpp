#pragma once
// A rank other than rank 0 under on_rank_loss=continue: the lost ranks' tiles rank 0
// hands it (tile_dealer.hpp, one at a time) go to its ReturnedTiles, which its feed
// serves before its own. It looks for one when its claim's answer says rank 0 handed
// tiles out (distributed/sharding.hpp's kHandedMark), while a tile of its own waits for
// the writer, and, once its own feed ran out, every fifth of a second: it then says it
// finished (its results sent) and waits, taking what comes, until the writer wrote
// every row, for a rank may be lost until the last.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>

#include "distributed/communicator.hpp"
#include "distributed/lease_book.hpp"
#include "stream/output_stream.hpp"
#include "stream/returned_tiles.hpp"

namespace mgpr::runtime {

class HandedTiles {
 public:
  struct Parts {
    ReturnedTiles& returned;
    Communicator& communicator;
    LeaseBook* book;                  // records a handed tile as a lease of one
    ResultMail& mail;                 // sends a handed tile's results at once
    std::span<const Tile> run_tiles;  // what rank 0 hands indexes (the feed's list)
    std::int64_t all_tiles = 0;       // the writer's count once it wrote every row
    int writer = 0;
  };
  // Installs its look as `returned`'s idle: it lives as long as the loop.
  explicit HandedTiles(Parts parts);
  // Takes what rank 0 handed this rank, if anything: one request.
  void take_now();

 private:
  void look(bool feed_ran_out);

  Parts parts_;
  std::mutex look_mutex_;  // one reader thread looks at a time; the others go on
  std::chrono::steady_clock::time_point next_look_{};
  bool said_finished_ = false;
};

}  // namespace mgpr::runtime
