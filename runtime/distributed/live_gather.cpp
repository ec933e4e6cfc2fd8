#include "distributed/live_gather.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "mgpr/store_keys.hpp"
#include "mgpr/text.hpp"

namespace mgpr::runtime {
namespace {

// The longest sleep between two looks, the first ones sooner: rank 0 looks at the count of
// ranks that put their bytes (one request; each rank's key only when it moved), the others
// for rank 0's answer, a request each: at 256 ranks every 20 ms that would be 12,800
// requests a second, at 100 ms 2,560.
constexpr auto kRank0LongestLook = std::chrono::milliseconds(20);
constexpr auto kLongestLook = std::chrono::milliseconds(100);
// The row's last parts other than a rank (mgpr/store_keys.hpp): rank 0's answer, and the count.
constexpr std::string_view kAll = "all";
constexpr std::string_view kCount = "count";

}  // namespace

std::string encode_gathered(const std::vector<std::optional<std::string>>& by_rank) {
  std::string text;
  for (const auto& bytes : by_rank) {
    text += fmt::format("{} {}\n", bytes ? 1 : 0, bytes ? bytes->size() : 0);
    if (bytes) text += *bytes;
  }
  return text;
}

std::vector<std::string> decode_gathered(const std::string& text, int world_size) {
  std::vector<std::string> by_rank;
  std::size_t at = 0;
  for (int rank = 0; rank < world_size; ++rank) {
    const auto line_end = text.find('\n', at);
    if (line_end == std::string::npos) throw std::logic_error("a malformed gather on the store");
    const std::string_view line(text.data() + at, line_end - at);
    const auto space = line.find(' ');
    const auto size = parse_number<std::size_t>(line.substr(space == std::string_view::npos ? line.size() : space + 1));
    if (space == std::string_view::npos || !size || line_end + 1 + *size > text.size())
      throw std::logic_error("a malformed gather on the store");
    by_rank.push_back(text.substr(line_end + 1, *size));
    at = line_end + 1 + *size;
  }
  return by_rank;
}

std::vector<std::string> gather_among_live(PeerStore& store, const PeerWatch& peers, LiveCollective where,
                                           const std::string& bytes) {
  const auto key = [&](const auto& part) { return store_key(StoreKey::kLiveGather, where.number, part); };
  auto look = std::chrono::milliseconds(1);
  const auto pause = [&] {
    peers.check();
    std::this_thread::sleep_for(look);
    look = std::min(look * 2, where.rank == 0 ? kRank0LongestLook : kLongestLook);
  };
  if (where.rank != 0) {
    store.set(key(where.rank), bytes);
    store.add(key(kCount), 1);
    while (!store.check(key(kAll))) pause();
    return decode_gathered(store.get(key(kAll)), where.world_size);
  }
  std::vector<std::optional<std::string>> by_rank(static_cast<std::size_t>(where.world_size));
  by_rank[0] = bytes;
  for (std::int64_t seen = 0;;) {
    const auto lost = peers.lost_ranks();
    const auto arrived = store.add(key(kCount), 0);
    bool waiting = false;
    for (int rank = 1; rank < where.world_size; ++rank) {
      auto& got = by_rank[static_cast<std::size_t>(rank)];
      if (got || std::find(lost.begin(), lost.end(), rank) != lost.end()) continue;
      if (arrived > seen && store.check(key(rank))) {
        got = store.get(key(rank));
      } else {
        waiting = true;
      }
    }
    seen = arrived;
    if (!waiting) break;
    pause();
  }
  // A rank lost after its bytes came still counts: rank 0's answer is what every rank reads.
  const auto all = encode_gathered(by_rank);
  store.set(key(kAll), all);
  return decode_gathered(all, where.world_size);
}

}  // namespace mgpr::runtime
