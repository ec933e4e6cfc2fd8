#include "config_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>

#include "override_grammar.hpp"

namespace mgpr {

void append_toml_value(std::ostringstream& out, const RunConfig& config, const ConfigKey& key) {
  std::visit(
      [&](auto member) {
        const auto& value = config.*member;
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (is_list_v<T>) {
          toml::array array;
          for (const auto& item : value) {
            if constexpr (std::is_same_v<T, std::vector<int>>) {
              array.push_back(static_cast<std::int64_t>(item));
            } else {
              array.push_back(item);
            }
          }
          out << array;
        } else if constexpr (std::is_same_v<T, int>) {
          out << toml::value<std::int64_t>(value);
        } else {
          out << toml::value<T>(value);
        }
      },
      key.field);
}

std::string describe_resolved_config(const std::filesystem::path& config_file, std::span<const std::string> arguments) {
  const RunConfig config = resolve_config(config_file, arguments);
  std::map<std::string, std::string, std::less<>> origin;
  if (!config_file.empty()) {
    // resolve_config read the file already; this second read only lists its keys.
    std::ifstream in(config_file);
    std::ostringstream text;
    text << in.rdbuf();
    for (const auto& [name, node] : toml::parse(text.str(), config_file.string())) {
      origin[std::string(name.str())] = fmt::format("file {}:{}", config_file.string(), node.source().begin.line);
    }
  }
  for (const auto& argument : arguments) {
    if (looks_like_override(argument)) {
      const auto parsed = override_grammar::parse_override(argument);
      origin[std::string(parsed.key)] =
          parsed.reset ? fmt::format("default, by override '{}'", argument) : fmt::format("override '{}'", argument);
    } else {
      origin["image_path"] = "arguments";
    }
  }
  std::ostringstream out;
  for (const auto& key : config_keys()) {
    out << key.name << " = ";
    append_toml_value(out, config, key);
    const auto found = origin.find(key.name);
    out << "  # " << (found == origin.end() ? std::string("default") : found->second) << '\n';
  }
  return out.str();
}

std::string to_toml(const RunConfig& config) {
  std::ostringstream out;
  for (const auto& key : config_keys()) {
    out << "# " << key.help << '\n' << key.name << " = ";
    append_toml_value(out, config, key);
    out << '\n';
  }
  return out.str();
}

std::string describe_config_keys() {
  const RunConfig defaults;
  std::string text = "Keys (key=value, or in the --config TOML file):\n";
  for (const auto& key : config_keys()) {
    std::ostringstream value;
    append_toml_value(value, defaults, key);
    std::string help(key.help);
    if (!key.choices.empty()) help += fmt::format(" ({})", fmt::join(key.choices, "|"));
    text += fmt::format("  {:<20} {:<20} {}\n", key.name, value.str(), help);
  }
  return text;
}

}  // namespace mgpr
