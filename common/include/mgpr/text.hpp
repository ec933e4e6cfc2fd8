#pragma once
// Small text conversions every process needs, once: whole-text numbers and lists.
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace mgpr {

// The number that is the whole of `text` (base 10, no sign '+', no spaces), or nullopt.
// Never throws: each caller words its own error, naming its input.
template <class Number>
std::optional<Number> parse_number(std::string_view text) {
  Number value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

// As above, and within [min, max].
template <class Number>
std::optional<Number> parse_number(std::string_view text, Number min, Number max) {
  const auto value = parse_number<Number>(text);
  if (!value || *value < min || *value > max) return std::nullopt;
  return value;
}

enum class EmptyItems { kDrop, kKeep };

// "a,,b" is {"a", "b"} (kDrop) or {"a", "", "b"} (kKeep); "" is {} either way.
std::vector<std::string> split_list(std::string_view text, char separator = ',', EmptyItems empty = EmptyItems::kDrop);

// 'text' in quotes for a message; over `limit` characters it is cut, with its length
// given, so a hostile megabyte of input does not become a megabyte of log.
std::string quote_short(std::string_view text, std::size_t limit = 40);

// `text` safe to print on a terminal: control bytes other than tab (escape sequences
// that retitle the window, move the cursor or hide what follows) become "\xHH".
std::string printable(std::string_view text);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF). A Linux path may hold any bytes, but TOML, which carries a job's
// configuration, holds only UTF-8: other bytes would come back as other characters.
bool is_utf8(std::string_view text);

}  // namespace mgpr
