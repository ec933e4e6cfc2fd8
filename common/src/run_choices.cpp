#include "mgpr/run_choices.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <span>
#include <string>

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
std::string_view name_of(JitExecutor executor) { return kJitExecutorNames.at(static_cast<std::size_t>(executor)); }
std::string_view name_of(OutputLayout layout) { return kOutputLayoutNames.at(static_cast<std::size_t>(layout)); }
std::string_view name_of(OutputFormat format) { return kOutputFormatNames.at(static_cast<std::size_t>(format)); }

Task parse_task(std::string_view name) { return parse_choice<Task>("task", name, kTaskNames); }
Sharding parse_sharding(std::string_view name) { return parse_choice<Sharding>("sharding", name, kShardingNames); }
OnRankLoss parse_on_rank_loss(std::string_view name) {
  return parse_choice<OnRankLoss>("on_rank_loss", name, kOnRankLossNames);
}
Accelerator parse_accelerator(std::string_view name) {
  return parse_choice<Accelerator>("accelerator", name, kAcceleratorNames);
}
Precision parse_precision(std::string_view name) { return parse_choice<Precision>("precision", name, kPrecisionNames); }
JitExecutor parse_jit_executor(std::string_view name) {
  return parse_choice<JitExecutor>("jit_executor", name, kJitExecutorNames);
}

OutputLayout parse_output_layout(std::string_view name) {
  return parse_choice<OutputLayout>("outputs", name, kOutputLayoutNames);
}

OutputFormat parse_output_format(std::string_view name) {
  return parse_choice<OutputFormat>("output_format", name, kOutputFormatNames);
}

NodataRule parse_nodata(std::string_view text) {
  if (text.empty()) return {};
  if (text == "none") return {NodataRule::Kind::kNone, 0.0};
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str() || *end != '\0' || std::isinf(value)) {
    throw UsageError(fmt::format(
        "nodata={} is not a number; give the value that marks missing pixels in every band (e.g. nodata=0), "
        "nodata=none to treat every pixel as data, or leave it out to use the raster's own nodata, mask or alpha",
        text));
  }
  return {NodataRule::Kind::kValue, value};
}

}  // namespace mgpr
