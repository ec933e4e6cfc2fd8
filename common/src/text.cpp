#include "mgpr/text.hpp"

#include <fmt/format.h>

namespace mgpr {

std::vector<std::string> split_list(std::string_view text, char separator, EmptyItems empty) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  while (true) {
    const auto end = text.find(separator);
    const auto item = text.substr(0, end);
    if (!item.empty() || empty == EmptyItems::kKeep) items.emplace_back(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return items;
}

std::string quote_short(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return fmt::format("'{}'", text);
  return fmt::format("'{}...' ({} characters)", text.substr(0, limit), text.size());
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace mgpr
