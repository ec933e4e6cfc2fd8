#pragma once
// What every target shares: the input as text, and the rule that bad input may throw
// (with a message, which is the point) but never crash, leak or hit undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; an exception is the parser refusing the input, as it should.
template <class Parse>
void refusing_is_fine(Parse&& parse) {
  try {
    parse();
  } catch (const std::exception& error) {
    // The message is what users read: building it must be safe too.
    static_cast<void>(std::string(error.what()).size());
  }
}

// Splits at newlines: one override, argument or line per line.
inline std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    lines.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

}  // namespace mgpr::fuzz
