#include "distributed/rank0_value.hpp"

#include <fmt/format.h>

#include <thread>

#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

// The stored bytes start with what they are: rank 0's value, or its refusal.
constexpr char kValue = 'V';
constexpr char kRefusal = 'E';

std::string read_key(const std::string& key, int rank) { return fmt::format("{}/read/{}", key, rank); }

// A refused run's rank 0 stays until every rank has read why (or `linger` passes): its
// store goes with it, and a rank that had not read the refusal would only learn that the
// store was gone.
void wait_for_readers(KeyValueStore& store, int world_size, const std::string& key, std::chrono::milliseconds linger) {
  const auto deadline = std::chrono::steady_clock::now() + linger;
  for (int rank = 1; rank < world_size; ++rank) {
    while (!store.check(read_key(key, rank))) {
      if (std::chrono::steady_clock::now() >= deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace

std::string value_of_rank0(KeyValueStore& store, int rank, int world_size, const std::string& key,
                           const std::function<std::string()>& make, std::chrono::milliseconds linger) {
  if (rank == 0) {
    std::string value;
    try {
      value = make();
    } catch (const UsageError& refused) {
      store.set(key, kRefusal + std::string(refused.what()));
      wait_for_readers(store, world_size, key, linger);
      throw;
    }
    store.set(key, kValue + value);
    return value;
  }
  const auto stored = store.get(key);
  store.set(read_key(key, rank), "1");
  if (stored.empty()) throw IoError(fmt::format("rank {}: rank 0 stored nothing under '{}'", rank, key));
  if (stored.front() != kValue) throw UsageError(stored.substr(1));
  return stored.substr(1);
}

std::string join_with_nuls(std::span<const std::string> items) {
  std::string joined;
  for (const auto& item : items) {
    joined += item;
    joined += '\0';
  }
  return joined;
}

std::vector<std::string> split_at_nuls(std::string_view joined) {
  std::vector<std::string> items;
  for (std::size_t start = 0; start < joined.size();) {
    const auto end = joined.find('\0', start);
    items.emplace_back(joined.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return items;
}

}  // namespace mgpr::runtime
