#include "override_grammar.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mgpr/error.hpp"

namespace mgpr::override_grammar {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_key(std::string_view key) {
  if (key.empty() || !((key.front() >= 'a' && key.front() <= 'z') || key.front() == '_')) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'; });
}

// The argument with Hydra's prefix taken off, and whether it was '~'.
std::pair<std::string_view, bool> without_prefix(std::string_view argument) {
  if (argument.starts_with("++")) return {argument.substr(2), false};
  if (argument.starts_with('+')) return {argument.substr(1), false};
  if (argument.starts_with('~')) return {argument.substr(1), true};
  return {argument, false};
}

bool quoted(std::string_view text) {
  return text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front();
}

[[noreturn]] void unclosed(std::string_view what, std::string_view where) {
  throw UsageError(fmt::format("{}: unclosed {}; close it, or quote the whole value", where, what));
}

}  // namespace

bool looks_like_override(std::string_view argument) {
  const auto [rest, reset] = without_prefix(argument);
  const auto equals = rest.find('=');
  if (equals == std::string_view::npos) return reset && is_key(rest);
  return is_key(rest.substr(0, equals));
}

Override parse_override(std::string_view argument) {
  const auto [rest, reset] = without_prefix(argument);
  const auto equals = rest.find('=');
  Override result;
  result.key = trim(rest.substr(0, equals));
  if (equals != std::string_view::npos) result.value = rest.substr(equals + 1);
  if (result.key.empty() || (equals == std::string_view::npos && !reset)) {
    throw UsageError(
        fmt::format("override '{}': expected key=value, e.g. tile_size=1024 (or ~key to put a key "
                    "back to its default)",
                    argument));
  }
  result.reset = reset || trim(result.value) == "null";
  return result;
}

std::string scalar_text(std::string_view value, std::string_view where) {
  value = trim(value);
  if (quoted(value)) return std::string(value.substr(1, value.size() - 2));
  if (!value.empty() && (value.front() == '\'' || value.front() == '"')) unclosed("quote", where);
  return std::string(value);
}

std::vector<std::string> list_items(std::string_view value, std::string_view where) {
  value = trim(value);
  if (value.starts_with('[')) {
    if (!value.ends_with(']')) unclosed("'['", where);
    value = value.substr(1, value.size() - 2);
  }
  std::vector<std::string> items;
  if (trim(value).empty()) return items;
  char quote = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    const char c = i < value.size() ? value[i] : ',';
    if (quote != 0) {
      if (c == quote) quote = 0;
      if (i == value.size()) unclosed("quote", where);
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == ']') {
      throw UsageError(fmt::format("{}: lists inside lists are not taken; give one flat list, e.g. [1,2,3]", where));
    } else if (c == ',') {
      items.push_back(scalar_text(value.substr(start, i - start), where));
      start = i + 1;
    }
  }
  return items;
}

}  // namespace mgpr::override_grammar
