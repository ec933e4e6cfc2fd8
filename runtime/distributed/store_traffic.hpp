#pragma once
// A rank's requests to the run's store, counted by the row of mgpr/store_keys.hpp their
// key belongs to: what the tile feed, the mail to the writer, the pacing, the progress
// line and the peer watch each ask of rank 0's store server, which serves every rank's
// requests one at a time. The rank's summary keeps them, so a run says how many requests
// a tile cost and which stage asked (docs/runtime-distributed.md); bench/store replays
// that mix at a scale one machine cannot run.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {

class StoreTraffic {
 public:
  // `requests` round trips to the store for `key` (take: a get and a delete). Any thread.
  void count(std::string_view key, std::int64_t requests = 1);
  // Each row's name with its count, rows never asked left out; "other" for keys of no row.
  [[nodiscard]] std::map<std::string, std::int64_t> by_row() const;

 private:
  std::array<std::atomic<std::int64_t>, kStoreKeys.size() + 1> counts_{};  // last: other
};

}  // namespace mgpr::runtime
