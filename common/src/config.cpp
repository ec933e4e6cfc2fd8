#include "mgpr/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "config_text.hpp"
#include "config_value_checks.hpp"
#include "foreign_names.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/model_card.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/text.hpp"
#include "override_grammar.hpp"

namespace mgpr {
namespace {

template <class T>
constexpr std::string_view kind_name() {
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_same_v<T, int>) return "a whole number";
  if constexpr (std::is_same_v<T, double>) return "a number";
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
  if constexpr (std::is_same_v<T, std::vector<int>>) return "a list of whole numbers";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers";
}

[[noreturn]] void unknown_key(std::string_view key, std::string_view where) {
  if (const auto foreign = foreign_key(key)) {
    throw UsageError(fmt::format("{}: unknown key '{}'; that is {}'s name, mgpr's is {}", where, key, foreign->origin,
                                 foreign->mgpr_name));
  }
  const auto near = nearest_config_keys(key);
  const std::string hint = near.empty() ? std::string("run with --help to list the keys")
                                        : fmt::format("did you mean {}?", fmt::join(near, ", "));
  throw UsageError(fmt::format("{}: unknown key '{}'; {}", where, key, hint));
}

// Parses one scalar from override text, already trimmed and unquoted by the override
// grammar; nullopt when it does not fit the type.
template <class T>
std::optional<T> parse_scalar(std::string_view text) {
  if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "True" || text == "1" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "False" || text == "0" || text == "no" || text == "off") return false;
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string(text);
  } else {
    return parse_number<T>(text);
  }
}

template <class T>
[[noreturn]] void wrong_type(const ConfigKey& key, std::string_view shown, std::string_view where) {
  throw UsageError(fmt::format("{}: {} must be {}, got {}", where, key.name, kind_name<T>(), shown));
}

template <class T>
T value_from_text(const ConfigKey& key, std::string_view text, std::string_view where) {
  if constexpr (is_list_v<T>) {
    using Item = typename T::value_type;
    T list;
    for (const auto& part : override_grammar::list_items(text, where)) {
      auto item = parse_scalar<Item>(part);
      if (!item) wrong_type<T>(key, fmt::format("'{}'", text), where);
      list.push_back(std::move(*item));
    }
    return list;
  } else {
    auto value = parse_scalar<T>(override_grammar::scalar_text(text, where));
    if (!value) wrong_type<T>(key, fmt::format("'{}'", text), where);
    return std::move(*value);
  }
}

template <class T>
std::optional<T> scalar_from_node(const toml::node& node) {
  if constexpr (std::is_same_v<T, double>) {
    if (node.is_integer()) return static_cast<double>(*node.value<int64_t>());
    if (node.is_floating_point()) return *node.value<double>();
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, int>) {
    if (!node.is_integer()) return std::nullopt;
    const int64_t wide = *node.value<int64_t>();
    if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(wide);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!node.is_boolean()) return std::nullopt;
    return *node.value<bool>();
  } else {
    if (!node.is_string()) return std::nullopt;
    return *node.value<std::string>();
  }
}

template <class T>
T value_from_node(const ConfigKey& key, const toml::node& node, std::string_view where) {
  const auto shown = [&] {
    std::ostringstream out;
    node.visit([&](const auto& value) { out << value; });
    return out.str();
  };
  if constexpr (is_list_v<T>) {
    using Item = typename T::value_type;
    T list;
    if (const auto* array = node.as_array()) {
      for (const auto& element : *array) {
        auto item = scalar_from_node<Item>(element);
        if (!item) wrong_type<T>(key, shown(), where);
        list.push_back(std::move(*item));
      }
    } else if (auto single = scalar_from_node<Item>(node)) {
      list.push_back(std::move(*single));
    } else {
      wrong_type<T>(key, shown(), where);
    }
    return list;
  } else {
    auto value = scalar_from_node<T>(node);
    if (!value) wrong_type<T>(key, shown(), where);
    return std::move(*value);
  }
}

template <class Source>
void set_field(RunConfig& config, const ConfigKey& key, const Source& source, std::string_view where) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(config.*member)>;
        T value;
        if constexpr (std::is_same_v<Source, toml::node>) {
          value = value_from_node<T>(key, source, where);
        } else {
          value = value_from_text<T>(key, source, where);
        }
        check_value(key, value, where);
        config.*member = std::move(value);
      },
      key.field);
}

}  // namespace

bool looks_like_override(std::string_view argument) { return override_grammar::looks_like_override(argument); }

void apply_override(RunConfig& config, std::string_view assignment) {
  const std::string where = fmt::format("override '{}'", assignment);
  const auto parsed = override_grammar::parse_override(assignment);
  const auto* key = find_config_key(parsed.key);
  if (key == nullptr) unknown_key(parsed.key, where);
  if (parsed.reset) {
    static const RunConfig defaults;
    std::visit([&](auto member) { config.*member = defaults.*member; }, key->field);
    return;
  }
  set_field(config, *key, parsed.value, where);
}

namespace {

// Every key of `table` into `config`; `where(node)` names the place of a value in messages.
template <class Where>
void apply_toml_table(RunConfig& config, const toml::table& table, const Where& where_of) {
  for (const auto& [name, node] : table) {
    const std::string where = where_of(node);
    const auto* key = find_config_key(name.str());
    if (key == nullptr) {
      if (node.is_table()) {
        throw UsageError(
            fmt::format("{}: sections like [{}] are not used; write the keys at the top level", where, name.str()));
      }
      unknown_key(name.str(), where);
    }
    set_field(config, *key, node, where);
  }
}

}  // namespace

void apply_generated_toml(RunConfig& config, std::string_view toml_text, std::string_view source_name) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& error) {
    throw std::logic_error(fmt::format("{}: generated TOML does not parse: {}", source_name, error.description()));
  }
  apply_toml_table(config, table, [&](const toml::node&) { return std::string(source_name); });
}

void apply_toml_text(RunConfig& config, std::string_view toml_text, std::string_view source_name) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& error) {
    throw UsageError(fmt::format("{}:{}:{}: not valid TOML: {}", source_name, error.source().begin.line,
                                 error.source().begin.column, error.description()));
  }
  apply_toml_table(config, table,
                   [&](const toml::node& node) { return fmt::format("{}:{}", source_name, node.source().begin.line); });
}

void apply_toml_file(RunConfig& config, const std::filesystem::path& file) {
  // Linux opens a folder as if it were an empty file: that would be an empty config.
  std::error_code ignored;
  if (std::filesystem::is_directory(file, ignored)) {
    throw UsageError(fmt::format("config file '{}' is a folder; give --config the TOML file in it", file.string()));
  }
  std::ifstream in(file);
  if (!in) {
    throw UsageError(fmt::format("config file '{}' cannot be read: {}; check the path given to --config", file.string(),
                                 std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  apply_toml_text(config, text.str(), file.string());
}

namespace {

// The config file, then the arguments in order, over `config`.
RunConfig resolve_over(RunConfig config, const std::filesystem::path& config_file,
                       std::span<const std::string> arguments) {
  if (!config_file.empty()) apply_toml_file(config, config_file);
  for (const auto& argument : arguments) {
    if (looks_like_override(argument)) {
      apply_override(config, argument);
    } else {
      config.image_path.push_back(argument);
    }
  }
  return config;
}

}  // namespace

std::optional<std::string> on_rank_loss_from_environment() {
  const char* raw = std::getenv(env::kOnRankLoss);
  if (raw == nullptr) return std::nullopt;
  const std::string value = raw;
  if (std::find(kOnRankLossNames.begin(), kOnRankLossNames.end(), value) == kOnRankLossNames.end()) {
    throw UsageError(fmt::format("{}={} is not one of {} (the plugin sets it from srun's --mgpr-on-rank-loss)",
                                 env::kOnRankLoss, quote_short(value), fmt::join(kOnRankLossNames, ", ")));
  }
  return value;
}

namespace {

// The step's on_rank_loss (the plugin's MGPR_ON_RANK_LOSS) under the file and the
// overrides: the watchdog acts on the step's, so the two must agree. Whether the file or
// an override sets the key is found by resolving them over the other value too: a key
// they set comes out the same either way.
void apply_step_rank_loss(RunConfig& config, const RunConfig& base, const std::filesystem::path& config_file,
                          std::span<const std::string> arguments) {
  const auto step = on_rank_loss_from_environment();
  if (!step) return;
  RunConfig probe = base;
  probe.on_rank_loss = config.on_rank_loss == kOnRankLossNames[0] ? kOnRankLossNames[1] : kOnRankLossNames[0];
  const bool config_sets_it =
      resolve_over(std::move(probe), config_file, arguments).on_rank_loss == config.on_rank_loss;
  if (!config_sets_it) {
    config.on_rank_loss = *step;
  } else if (config.on_rank_loss != *step) {
    throw UsageError(fmt::format(
        "the config sets on_rank_loss={} but the step was started with {}={} (srun --mgpr-on-rank-loss={}, or the "
        "site's plugstack.conf): the plugin's watchdog and the ranks would disagree on whether losing a rank ends "
        "the run; give srun --mgpr-on-rank-loss={}, or leave on_rank_loss out of the config",
        config.on_rank_loss, env::kOnRankLoss, *step, *step, config.on_rank_loss));
  }
}

}  // namespace

RunConfig resolve_config(const std::filesystem::path& config_file, std::span<const std::string> arguments,
                         std::optional<ModelCard>* card_found) {
  RunConfig base;
  RunConfig config = resolve_over(base, config_file, arguments);
  // The model's card sits under the file and the overrides: once the model is known, the
  // layers are applied again over the card's settings.
  auto card = card_of_model(config.model);
  if (card) {
    apply_model_card(base, *card);
    config = resolve_over(base, config_file, arguments);
  }
  apply_step_rank_loss(config, base, config_file, arguments);
  validate(config);
  if (card_found != nullptr) *card_found = std::move(card);
  return config;
}

}  // namespace mgpr
