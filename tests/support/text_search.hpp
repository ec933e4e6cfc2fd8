#pragma once
// What the tests ask of a program's output or a written file: does it hold a piece of
// text, and how many times.
#include <cstddef>
#include <string>

namespace mgpr::test {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// How many times `part` occurs in `text` (banners, requeue lines, SVG elements).
inline std::size_t count(const std::string& text, const std::string& part) {
  std::size_t found = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
  return found;
}

}  // namespace mgpr::test
