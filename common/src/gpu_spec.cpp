#include "mgpr/gpu_spec.hpp"

#include <fmt/format.h>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr {
namespace {

constexpr int kMaxGpusPerNode = 64;  // no real node has more; catches typos like 800

bool valid_type_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

[[noreturn]] void bad_spec(std::string_view text, std::string_view why) {
  throw UsageError(fmt::format(
      "invalid GPU spec '{}': {}; write [TYPE:]COUNT with COUNT GPUs per node, e.g. 'a100:2' or '4'", text, why));
}

}  // namespace

std::string GpuSpec::to_slurm() const {
  return type.empty() ? std::to_string(count) : fmt::format("{}:{}", type, count);
}

GpuSpec parse_gpu_spec(std::string_view text) {
  if (text.empty()) bad_spec(text, "it is empty");
  GpuSpec spec;
  std::string_view count_text = text;
  if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    const std::string_view type = text.substr(0, colon);
    count_text = text.substr(colon + 1);
    if (type.empty()) bad_spec(text, "the GPU type before ':' is empty");
    for (const char c : type) {
      if (!valid_type_char(c)) bad_spec(text, fmt::format("the GPU type contains '{}'", c));
    }
    spec.type = std::string(type);
  }
  if (count_text.empty()) bad_spec(text, "the GPU count is missing");
  const auto count = parse_number<int>(count_text);
  if (!count) bad_spec(text, fmt::format("'{}' is not a whole number", count_text));
  spec.count = *count;
  if (spec.count < 1) bad_spec(text, "the GPU count must be at least 1");
  if (spec.count > kMaxGpusPerNode) {
    bad_spec(text, fmt::format("{} GPUs per node is more than any node has (max {})", spec.count, kMaxGpusPerNode));
  }
  return spec;
}

}  // namespace mgpr
