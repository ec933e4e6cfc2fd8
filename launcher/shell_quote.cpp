#include "shell_quote.hpp"

#include <algorithm>

namespace mgpr::launcher {

std::string shell_quote(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == '/' || c == ':' || c == '=' || c == ',' || c == '@' || c == '%' || c == '+';
  });
  if (plain && text.front() != '-' && text.front() != '=') return std::string(text);
  // Inside single quotes nothing is special except the quote itself, which is closed,
  // escaped and reopened.
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

}  // namespace mgpr::launcher
