#include "stream/tile_dealer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "distributed/lease_book.hpp"
#include "distributed/sharding.hpp"
#include "mgpr/store_keys.hpp"
#include "stream/output_stream.hpp"

namespace mgpr::runtime {
namespace {

// Enough names to recognise a tile named again after another loss.
constexpr std::size_t kLostTilesNamed = 10;
// The loss of a tile's rank that makes it skipped rather than handed again.
constexpr int kLossesToSkip = 2;

std::string lost_rank_tiles_message(int rank, const std::vector<std::string>& names, bool done_again) {
  std::string named;
  for (std::size_t i = 0; i < names.size() && i < kLostTilesNamed; ++i) named += (i > 0 ? "; " : "") + names[i];
  if (names.size() > kLostTilesNamed) named += fmt::format("; and {} more", names.size() - kLostTilesNamed);
  return fmt::format(
      "rank {} was lost holding {} tile(s) whose results had not reached the writer{}: {}. A tile named again after "
      "another loss may be what ends the rank (a damaged block, a tile too large for memory)",
      rank, names.size(), done_again ? ", which the live ranks do again" : "", named);
}

std::int64_t position_of(std::span<const Tile> run_tiles, const TileId& id) {
  const auto at = std::lower_bound(run_tiles.begin(), run_tiles.end(), id,
                                   [](const Tile& candidate, const TileId& wanted) { return candidate.id < wanted; });
  return at != run_tiles.end() && at->id == id ? at - run_tiles.begin() : -1;
}

}  // namespace

std::string encode_tile_positions(std::span<const Tile> run_tiles, std::span<const Tile> tiles) {
  std::vector<Lease> leases;
  for (const auto& tile : tiles) {
    if (const auto position = position_of(run_tiles, tile.id); position >= 0)
      leases.emplace_back(position, position + 1);
  }
  return encode_leases(leases);
}

std::vector<Tile> decode_tile_positions(std::span<const Tile> run_tiles, const std::string& text) {
  std::vector<Tile> tiles;
  const auto leases = decode_leases(text, static_cast<std::int64_t>(run_tiles.size()));
  if (!leases) return tiles;
  for (const auto& [first, end] : *leases) {
    for (auto position = first; position < end; ++position)
      tiles.push_back(run_tiles[static_cast<std::size_t>(position)]);
  }
  return tiles;
}

TileDealer::TileDealer(Communicator& communicator, const OutputPlan& plan, WriterRecord& record, DealerHooks hooks)
    : communicator_(communicator), plan_(plan), record_(record), hooks_(std::move(hooks)) {}

void TileDealer::name_losses() {
  try {
    hooks_.catch_up();  // what the lost ranks sent before they went is theirs delivered
    for (const int rank : communicator_.lost_ranks()) record_loss(rank, unfinished_of(rank), false);
  } catch (const std::exception&) {
    // Naming is a help: the loss itself is what the rank reports.
  }
}

void TileDealer::deal() {
  std::vector<int> newly_lost;
  for (const int rank : communicator_.lost_ranks()) {
    if (!returned_for_.contains(rank)) newly_lost.push_back(rank);
  }
  const bool sweep_asked = record_.returned->take_sweep_request();
  if (newly_lost.empty() && !sweep_asked && to_hand_.empty() && handed_.empty()) return;
  if (!newly_lost.empty() || sweep_asked) hooks_.catch_up();  // what a lost rank sent before it went is delivered
  std::erase_if(handed_, [this](const auto& entry) { return hooks_.received(entry.second.id); });
  for (const int rank : newly_lost) return_lost(rank);
  // Asked while a loss was still unknown here: the loop asks again once all is handed.
  if (sweep_asked && to_hand_.empty() && handed_.empty()) sweep();
  hand_out();
}

std::vector<Tile> TileDealer::unfinished_of(int rank) {
  const auto book = communicator_.take_if_set(store_key(StoreKey::kLeaseLedger, rank));
  std::vector<Tile> unfinished;
  if (!book) return unfinished;  // it claimed nothing yet
  for (const auto& tile : decode_tile_positions(record_.run_tiles, *book)) {
    if (!hooks_.received(tile.id)) unfinished.push_back(tile);
  }
  return unfinished;
}

std::vector<Tile> TileDealer::untaken_by(int rank) {
  const auto handed = communicator_.take_if_set(store_key(StoreKey::kHandedTiles, rank));
  return handed ? decode_tile_positions(record_.run_tiles, *handed) : std::vector<Tile>{};
}

void TileDealer::record_loss(int rank, const std::vector<Tile>& unfinished, bool done_again) {
  std::vector<std::string> names;
  for (const auto& tile : unfinished) names.push_back(tile_name(plan_, tile));
  if (record_.lost_ranks != nullptr) {
    const auto peer = communicator_.lost_peer(rank);
    LostRankRecord lost{rank,       peer.host, peer.unix_s, peer.why, static_cast<std::int64_t>(names.size()),
                        done_again, {}};
    lost.tiles.assign(names.begin(),
                      names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kLostTilesNamed)));
    record_.lost_ranks->push_back(std::move(lost));
  }
  if (names.empty() || record_.lost_rank_tiles == nullptr) return;
  record_.lost_rank_tiles->push_back(lost_rank_tiles_message(rank, names, done_again));
  fmt::print(stderr, "mgpr: {}\n", record_.lost_rank_tiles->back());
}

void TileDealer::return_lost(int rank) {
  hooks_.fence(rank);
  returned_for_.insert(rank);
  // A handed tile it had not taken was never begun: the next one handed out, no loss.
  const auto untaken = untaken_by(rank);
  auto unfinished = unfinished_of(rank);
  // One it took but had not yet put in its book is lost with it all the same.
  if (const auto handed = handed_.find(rank); handed != handed_.end()) {
    const auto& tile = handed->second;
    const auto is = [&tile](const Tile& other) { return other.id == tile.id; };
    if (!hooks_.received(tile.id) && std::none_of(untaken.begin(), untaken.end(), is) &&
        std::none_of(unfinished.begin(), unfinished.end(), is)) {
      unfinished.push_back(tile);
    }
    handed_.erase(handed);
  }
  record_loss(rank, unfinished, true);
  for (auto tile = untaken.rbegin(); tile != untaken.rend(); ++tile) to_hand_.push_front(*tile);
  for (const auto& tile : unfinished) lose(tile);
}

void TileDealer::sweep() {
  // Every live rank finished and sent its results, nothing handed is out, and rank 0's
  // own results are here: a tile still missing, and never handed again, was held by a
  // rank lost before its book said so.
  std::vector<Tile> missing;
  for (const auto& tile : record_.run_tiles) {
    if (!hooks_.received(tile.id) && !returned_.contains(tile.id)) missing.push_back(tile);
  }
  if (!missing.empty()) {
    fmt::print(stderr, "mgpr: rank 0: {} tile(s) no live rank holds were lost with a rank; they are done again\n",
               missing.size());
  }
  for (const auto& tile : missing) lose(tile);
}

void TileDealer::lose(const Tile& tile) {
  returned_.insert(tile.id);
  if (++losses_[tile.id] < kLossesToSkip) {
    to_hand_.push_back(tile);
    return;
  }
  skipped_.push_back(tile);
  hooks_.skip(tile);
  const auto line = fmt::format(
      "{} was being done by {} ranks when each was lost; it is skipped, not handed to a third: the run finishes "
      "without its results (a damaged block, or a tile too large for memory, may end whatever rank reads it)",
      tile_name(plan_, tile), kLossesToSkip);
  if (record_.lost_rank_tiles != nullptr) record_.lost_rank_tiles->push_back(line);
  fmt::print(stderr, "mgpr: {}\n", line);
}

void TileDealer::hand_out() {
  std::vector<int> live;
  const auto lost = communicator_.lost_ranks();
  for (int rank = 1; rank < communicator_.world_size(); ++rank) {
    if (std::find(lost.begin(), lost.end(), rank) == lost.end()) live.push_back(rank);
  }
  if (live.empty()) {
    // Rank 0 alone is left: it does them itself.
    record_.returned->add({to_hand_.begin(), to_hand_.end()});
    to_hand_.clear();
  }
  bool handed_any = false;
  for (const int rank : live) {
    if (to_hand_.empty()) break;
    if (handed_.contains(rank)) continue;
    const auto tile = to_hand_.front();
    to_hand_.pop_front();
    communicator_.put(store_key(StoreKey::kHandedTiles, rank), encode_tile_positions(record_.run_tiles, {&tile, 1}));
    handed_.emplace(rank, tile);
    handed_any = true;
  }
  // Ranks still claiming learn of it from their next claim's answer, at no request more.
  if (handed_any) communicator_.add(store_key(StoreKey::kNextTile), kHandedMark);
  record_.returned->settled(to_hand_.empty() && handed_.empty());
}

}  // namespace mgpr::runtime
