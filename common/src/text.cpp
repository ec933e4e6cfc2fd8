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

bool is_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The continuation count and the allowed range of the second byte (RFC 3629, table 3-7).
    int continuation = 0;
    unsigned char second_min = 0x80;
    unsigned char second_max = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      continuation = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      continuation = 2;
      if (lead == 0xE0) second_min = 0xA0;  // overlong
      if (lead == 0xED) second_max = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      continuation = 3;
      if (lead == 0xF0) second_min = 0x90;  // overlong
      if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (text.size() - i <= static_cast<std::size_t>(continuation)) return false;  // cut short
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < second_min || second > second_max) return false;
    for (int k = 2; k <= continuation; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if (next < 0x80 || next > 0xBF) return false;
    }
    i += static_cast<std::size_t>(continuation) + 1;
  }
  return true;
}

}  // namespace mgpr
