#include "distributed/store_traffic.hpp"

#include <algorithm>

namespace mgpr::runtime {

void StoreTraffic::count(std::string_view key, std::int64_t requests) {
  std::size_t index = kStoreKeys.size();
  if (const auto row = store_key_of(key)) {
    index = static_cast<std::size_t>(std::find_if(kStoreKeys.begin(), kStoreKeys.end(),
                                                  [&](const StoreKeyRow& candidate) { return candidate.key == *row; }) -
                                     kStoreKeys.begin());
  }
  counts_[index].fetch_add(requests, std::memory_order_relaxed);
}

std::map<std::string, std::int64_t> StoreTraffic::by_row() const {
  std::map<std::string, std::int64_t> rows;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    const auto count = counts_[i].load(std::memory_order_relaxed);
    if (count > 0) rows[i < kStoreKeys.size() ? std::string(kStoreKeys[i].name) : "other"] = count;
  }
  return rows;
}

}  // namespace mgpr::runtime
