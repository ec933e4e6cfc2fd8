#include "mgpr/run_choices.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <span>

#include "mgpr/error.hpp"

namespace mgpr {
namespace {

template <typename Enum>
Enum parse_choice(std::string_view key, std::string_view value, std::span<const std::string_view> names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == value) return static_cast<Enum>(i);
  }
  throw UsageError(fmt::format("{}={} is not one of {}", key, value, fmt::join(names, ", ")));
}

}  // namespace

std::string_view name_of(Task task) { return kTaskNames.at(static_cast<std::size_t>(task)); }
std::string_view name_of(Sharding sharding) { return kShardingNames.at(static_cast<std::size_t>(sharding)); }
std::string_view name_of(Accelerator accelerator) {
  return kAcceleratorNames.at(static_cast<std::size_t>(accelerator));
}
std::string_view name_of(Precision precision) { return kPrecisionNames.at(static_cast<std::size_t>(precision)); }

Task parse_task(std::string_view name) { return parse_choice<Task>("task", name, kTaskNames); }
Sharding parse_sharding(std::string_view name) { return parse_choice<Sharding>("sharding", name, kShardingNames); }
Accelerator parse_accelerator(std::string_view name) {
  return parse_choice<Accelerator>("accelerator", name, kAcceleratorNames);
}
Precision parse_precision(std::string_view name) { return parse_choice<Precision>("precision", name, kPrecisionNames); }

}  // namespace mgpr
