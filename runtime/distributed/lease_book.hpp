#pragma once
// The leases a rank holds unfinished: claimed from the feed (sharding.hpp) and not yet
// delivered to the writer. A rank other than the writer's puts its book on the run's
// store at every claim (one request a lease, under tiles/leases/<rank>), so that, the
// rank lost, rank 0 knows which tiles it held whose results never came: it names them
// (a tile named after two losses may be what kills ranks) and they can be done again.
// A lease leaves the book once its every tile was delivered, so what is put stays a few
// leases long however long the run.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distributed/communicator.hpp"
#include "geometry/tiler.hpp"

namespace mgpr::runtime {

// A lease: the positions [first, end) in the run's tile list, which every rank has alike.
using Lease = std::pair<std::int64_t, std::int64_t>;

class LeaseBook {
 public:
  // `tiles`: the run's tile list the feed hands out (outlives the book).
  LeaseBook(std::span<const Tile> tiles, Communicator& communicator);

  // From the feed, under its lock: records the lease and puts the book on the store.
  void claimed(Lease lease);
  // From the sink: these tiles' results reached the writer (or its mail).
  void delivered(std::span<const TileId> tiles);
  // A raster the rank could not read: its tiles will have no results.
  void raster_failed(int image);

  [[nodiscard]] std::vector<Lease> open_leases() const;

 private:
  struct Open {
    std::int64_t end = 0;
    std::int64_t undelivered = 0;
  };
  [[nodiscard]] std::vector<Lease> open_leases_locked() const;

  std::span<const Tile> tiles_;
  Communicator& communicator_;
  std::string key_;
  mutable std::mutex mutex_;                 // the feed and the mail's thread
  std::map<std::int64_t, Open> leases_;      // by first position
  std::map<TileId, std::int64_t> lease_of_;  // every undelivered tile -> its lease's first
};

// The book as put on the store: "first end" pairs, one a line.
std::string encode_leases(std::span<const Lease> leases);
// Nullopt for text that is not such a list, or names positions outside [0, tiles).
std::optional<std::vector<Lease>> decode_leases(std::string_view text, std::int64_t tiles);

}  // namespace mgpr::runtime
