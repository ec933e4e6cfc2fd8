#include "distributed/lease_book.hpp"

#include <fmt/format.h>

#include "mgpr/store_keys.hpp"
#include "mgpr/text.hpp"

namespace mgpr::runtime {

LeaseBook::LeaseBook(std::span<const Tile> tiles, Communicator& communicator)
    : tiles_(tiles), communicator_(communicator), key_(store_key(StoreKey::kLeaseLedger, communicator.rank())) {}

void LeaseBook::claimed(Lease lease) {
  std::string book;
  {
    const std::lock_guard lock(mutex_);
    const auto [first, end] = lease;
    for (auto position = first; position < end; ++position) {
      lease_of_[tiles_[static_cast<std::size_t>(position)].id] = first;
    }
    if (end > first) leases_[first] = {end, end - first};
    book = encode_leases(open_leases_locked());
  }
  communicator_.put(key_, book);
}

void LeaseBook::delivered(std::span<const TileId> tiles) {
  const std::lock_guard lock(mutex_);
  for (const auto& id : tiles) {
    const auto found = lease_of_.find(id);
    if (found == lease_of_.end()) continue;
    if (const auto lease = leases_.find(found->second); lease != leases_.end() && --lease->second.undelivered == 0) {
      leases_.erase(lease);
    }
    lease_of_.erase(found);
  }
}

void LeaseBook::raster_failed(int image) {
  std::vector<TileId> skipped;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [id, first] : lease_of_) {
      if (id.image == image) skipped.push_back(id);
    }
  }
  delivered(skipped);
}

std::vector<Lease> LeaseBook::open_leases() const {
  const std::lock_guard lock(mutex_);
  return open_leases_locked();
}

std::vector<Lease> LeaseBook::open_leases_locked() const {
  std::vector<Lease> open;
  for (const auto& [first, lease] : leases_) open.emplace_back(first, lease.end);
  return open;
}

std::string encode_leases(std::span<const Lease> leases) {
  std::string text;
  for (const auto& [first, end] : leases) text += fmt::format("{} {}\n", first, end);
  return text;
}

std::optional<std::vector<Lease>> decode_leases(std::string_view text, std::int64_t tiles) {
  std::vector<Lease> leases;
  while (!text.empty()) {
    const auto line_end = text.find('\n');
    if (line_end == std::string_view::npos) return std::nullopt;  // every line ends
    const auto line = text.substr(0, line_end);
    text.remove_prefix(line_end + 1);
    const auto space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const auto first = parse_number<std::int64_t>(line.substr(0, space), 0, tiles);
    const auto end = parse_number<std::int64_t>(line.substr(space + 1), 0, tiles);
    if (!first || !end || *end <= *first) return std::nullopt;
    leases.emplace_back(*first, *end);
  }
  return leases;
}

}  // namespace mgpr::runtime
