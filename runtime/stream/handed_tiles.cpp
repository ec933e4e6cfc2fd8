#include "stream/handed_tiles.hpp"

#include <vector>

#include "mgpr/store_keys.hpp"
#include "stream/writer_pace.hpp"

namespace mgpr::runtime {
namespace {

// How often a rank looks for a handed tile without a claim to tell it: rank 0 reads the
// results it waits for every kMailPoll, so sooner would find nothing new.
constexpr auto kHandedLook = kMailPoll;

}  // namespace

HandedTiles::HandedTiles(Parts parts) : parts_(parts) {
  parts_.returned.on_idle([this](bool feed_ran_out) { look(feed_ran_out); });
}

void HandedTiles::take_now() {
  const auto key = store_key(StoreKey::kHandedTiles, parts_.communicator.rank());
  const auto handed = parts_.communicator.take_if_set(key);
  if (!handed) return;
  // Positions in the run's list, as a book records leases: each a lease of its own here.
  const auto leases = decode_leases(*handed, std::ssize(parts_.run_tiles));
  if (!leases) return;
  std::vector<Tile> tiles;
  for (const auto& lease : *leases) {
    if (parts_.book != nullptr) parts_.book->claimed(lease);
    for (auto position = lease.first; position < lease.second; ++position) {
      tiles.push_back(parts_.run_tiles[static_cast<std::size_t>(position)]);
      parts_.mail.hurry(tiles.back().id);
    }
  }
  parts_.returned.add(tiles);
}

void HandedTiles::look(bool feed_ran_out) {
  const std::unique_lock lock(look_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_look_) return;
  next_look_ = now + kHandedLook;
  take_now();
  if (!feed_ran_out) return;
  if (!said_finished_ && parts_.returned.nothing_in_flight()) {
    parts_.mail.flush();
    say_finished(parts_.communicator);
    said_finished_ = true;
  }
  if (tiles_written(parts_.communicator, parts_.writer) >= parts_.all_tiles) parts_.returned.all_written();
}

}  // namespace mgpr::runtime
