#pragma once
// Rank 0's writer, once the run lost a rank: what the lost rank held whose results never
// came (its book of leases, distributed/lease_book.hpp) is named; under
// on_rank_loss=continue those tiles are handed again to the live ranks, one tile to a
// rank at a time, the next once its result came. One at a time because a tile lost with
// a rank may be what ended it (a damaged block that aborts the reader, a tile too large
// for memory): a rank lost while it held a handed tile is then lost for that tile alone,
// and a tile lost twice is not handed a third time but skipped and named, so that one
// such tile costs two ranks, never every survivor in turn. Rank 0 holds the store and
// the writer and must not be lost for a suspect: it does the handed tiles itself only
// once no other rank lives.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "distributed/communicator.hpp"
#include "geometry/tiler.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

struct WriterRecord;

// What the dealer asks of the writer it serves (output_stream.hpp), on its thread.
struct DealerHooks {
  std::function<bool(const TileId&)> received;  // its result is with the writer
  std::function<void()> catch_up;               // take every result sent so far
  std::function<void(int rank)> fence;          // read no more of the rank's mail
  std::function<void(const Tile&)> skip;        // written as a tile without results
};

class TileDealer {
 public:
  TileDealer(Communicator& communicator, const OutputPlan& plan, WriterRecord& record, DealerHooks hooks);

  // Under on_rank_loss=fail, the run lost a rank: it names what the rank held.
  void name_losses();
  // Under continue, at every wake of the writer: the ranks newly lost are fenced and
  // what they held is handed again (or skipped); a sweep asked for (returned_tiles.hpp)
  // hands again every tile still missing; each live rank free of a handed tile gets one.
  void deal();

  // The tiles skipped, lost twice (after drain).
  [[nodiscard]] const std::vector<Tile>& skipped() const { return skipped_; }

 private:
  // The tiles of `rank`'s book on the store whose results the writer has not.
  std::vector<Tile> unfinished_of(int rank);
  // The tiles handed to `rank` that it had not taken: never begun.
  std::vector<Tile> untaken_by(int rank);
  void record_loss(int rank, const std::vector<Tile>& unfinished, bool done_again);
  void return_lost(int rank);
  void sweep();
  // A tile lost with a rank once more: handed again, or skipped the second time.
  void lose(const Tile& tile);
  void hand_out();

  Communicator& communicator_;
  const OutputPlan& plan_;
  WriterRecord& record_;
  DealerHooks hooks_;
  std::set<int> returned_for_;    // the lost ranks whose tiles were returned
  std::set<TileId> returned_;     // every tile ever handed again (a sweep's own)
  std::map<TileId, int> losses_;  // how often each tile was lost with a rank
  std::deque<Tile> to_hand_;      // waiting for a live rank
  std::map<int, Tile> handed_;    // each live rank's handed tile, until its result came
  std::vector<Tile> skipped_;
};

// Positions of `tiles` in the run's list (sorted by id), as a lease book encodes them.
std::string encode_tile_positions(std::span<const Tile> run_tiles, std::span<const Tile> tiles);
std::vector<Tile> decode_tile_positions(std::span<const Tile> run_tiles, const std::string& text);

}  // namespace mgpr::runtime
