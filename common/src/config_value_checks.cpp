#include "config_value_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "foreign_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr {
namespace {

// Found by fuzzing (docs/reliability.md): a path with a byte that is not UTF-8 was
// written to the job's config.toml as another character, so the job read another path.
void check_utf8(const ConfigKey& key, const std::string& value, std::string_view where) {
  if (!is_utf8(value)) {
    throw UsageError(fmt::format(
        "{}: {} is not valid UTF-8 text ({}); the job's configuration is TOML, which holds only UTF-8, so the "
        "value would reach the job changed. Rename the file (or folder) to a UTF-8 name",
        where, key.name, quote_short(printable(value))));
  }
}

}  // namespace

void check_value(const ConfigKey& key, int value, std::string_view where) {
  if (value < key.min_value) {
    throw UsageError(fmt::format("{}: {} must be at least {}, got {}", where, key.name, key.min_value, value));
  }
  if (value > key.max_value) {
    throw UsageError(fmt::format("{}: {} must be at most {}, got {}; more cannot help on any node", where, key.name,
                                 key.max_value, value));
  }
}

void check_value(const ConfigKey& key, double value, std::string_view where) {
  // nan passes every comparison, so a threshold of nan would silently merge nothing.
  if (!std::isfinite(value)) {
    throw UsageError(fmt::format("{}: {} must be a finite number, got {}", where, key.name, value));
  }
  if (value < 0) throw UsageError(fmt::format("{}: {} must not be negative, got {}", where, key.name, value));
}

void check_value(const ConfigKey& key, const std::string& value, std::string_view where) {
  check_utf8(key, value, where);
  if (!key.choices.empty() && std::find(key.choices.begin(), key.choices.end(), value) == key.choices.end()) {
    const auto foreign = foreign_value(key.name, value);
    const std::string hint = foreign ? fmt::format("; '{}' is {}'s spelling, mgpr's is {}={}", value, foreign->origin,
                                                   key.name, foreign->mgpr_name)
                                     : std::string();
    throw UsageError(fmt::format("{}: {} must be one of {}, got '{}'{}", where, key.name, fmt::join(key.choices, ", "),
                                 value, hint));
  }
}

void check_value(const ConfigKey& key, const std::vector<int>& value, std::string_view where) {
  for (const int band : value) {
    if (band < 1) throw UsageError(fmt::format("{}: {} are numbered from 1, got {}", where, key.name, band));
  }
}

void check_value(const ConfigKey& key, const std::vector<double>& value, std::string_view where) {
  for (const double item : value) {
    if (!std::isfinite(item)) {
      throw UsageError(fmt::format("{}: {} must hold finite numbers, got {}", where, key.name, item));
    }
  }
}

void check_value(const ConfigKey& key, const std::vector<std::string>& value, std::string_view where) {
  for (const auto& item : value) check_utf8(key, item, where);
}

}  // namespace mgpr
