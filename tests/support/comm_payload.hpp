#pragma once
// What each rank of the test helper contributes to all_gather, shared by the helper and
// the tests that check what it gathered: sizes differ per rank (rank 0 gives none) and
// the bytes include zeros, so padding or a string cut at a NUL would show.
#include <cstdint>
#include <string>
#include <string_view>

namespace mgpr::test {

inline std::string gather_payload(int rank) {
  const std::size_t size = static_cast<std::size_t>(rank) * 1000 + static_cast<std::size_t>(rank % 2) * 7;
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((static_cast<std::size_t>(rank) * 31 + i) % 256);
  return bytes;
}

inline std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t hash = 1469598103934665603ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace mgpr::test
