#include "mgpr/store_keys.hpp"

#include <algorithm>
#include <stdexcept>

namespace mgpr {

const StoreKeyRow& store_key_row(StoreKey key) {
  const auto row =
      std::find_if(kStoreKeys.begin(), kStoreKeys.end(), [key](const auto& candidate) { return candidate.key == key; });
  if (row == kStoreKeys.end()) throw std::logic_error("a store key without its row in the table");
  return *row;
}

std::string store_key(StoreKey key) { return detail::store_key_with(key, 0, {}); }

std::optional<StoreKey> store_key_of(std::string_view key) {
  for (const auto& row : kStoreKeys) {
    if (!key.starts_with(row.name)) continue;
    const auto rest = key.substr(row.name.size());
    // No name is another's followed by '/' (the table's rule), so one row at most matches.
    if (row.parts.empty() ? rest.empty() : rest.starts_with('/')) return row.key;
  }
  return std::nullopt;
}

namespace detail {

std::string store_key_with(StoreKey key, std::size_t part_count, std::string joined_parts) {
  const auto& row = store_key_row(key);
  if (static_cast<std::size_t>(std::count(row.parts.begin(), row.parts.end(), '<')) != part_count) {
    throw std::logic_error(fmt::format("store key {} takes the parts {}, not {} part(s)", row.name,
                                       row.parts.empty() ? "(none)" : row.parts, part_count));
  }
  return std::string(row.name) + joined_parts;
}

}  // namespace detail
}  // namespace mgpr
