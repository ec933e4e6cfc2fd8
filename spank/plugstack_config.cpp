#include "plugstack_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr::spank {
namespace {

int parse_int(std::string_view text, std::string_view where, int min, int max) {
  const auto value = parse_number<int>(text, min, max);
  if (!value) {
    throw UsageError(fmt::format("{}: {} is not a whole number from {} to {}", where, quote_short(text), min, max));
  }
  return *value;
}

bool parse_bool(std::string_view text, std::string_view where) {
  if (text == "1" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "no") return false;
  throw UsageError(fmt::format("{}: {} is not 0 or 1", where, quote_short(text)));
}

}  // namespace

PlugstackConfig& plugstack_config() {
  static PlugstackConfig args;
  return args;
}

Bind parse_bind(std::string_view text, std::string_view where) {
  if (text == "gpu") return Bind::kGpu;
  if (text == "none") return Bind::kNone;
  throw UsageError(
      fmt::format("{}: {} is not gpu or none (gpu: one GPU per rank; none: leave devices "
                  "alone, for CPU runs)",
                  where, quote_short(text)));
}

OnRankLoss parse_rank_loss(std::string_view text, std::string_view where) {
  if (text == "fail") return OnRankLoss::kFail;
  if (text == "continue") return OnRankLoss::kContinue;
  throw UsageError(
      fmt::format("{}: {} is not fail or continue (fail: a lost rank ends the step; continue: the run goes on "
                  "without a rank other than rank 0)",
                  where, quote_short(text)));
}

int parse_seconds(std::string_view text, std::string_view where) { return parse_int(text, where, 0, 7 * 24 * 3600); }

int parse_port(std::string_view text, std::string_view where) { return parse_int(text, where, 1024, 65535); }

PlugstackConfig parse_plugstack_config(std::span<const std::string> args) {
  PlugstackConfig out;
  std::vector<std::string_view> seen;
  for (const auto& arg : args) {
    const auto equals = arg.find('=');
    const std::string where = fmt::format("plugstack.conf argument {}", quote_short(arg));
    if (equals == std::string::npos) {
      throw UsageError(fmt::format("{}: expected key=value", where));
    }
    const std::string_view key = std::string_view(arg).substr(0, equals);
    const std::string_view value = std::string_view(arg).substr(equals + 1);
    // The same key twice is a site's edit gone wrong: which one wins is not obvious.
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw UsageError(fmt::format("{}: {} is given twice; keep one", where, quote_short(key)));
    }
    seen.push_back(key);
    if (key == "timeout") {
      out.rendezvous_timeout_s = parse_seconds(value, where);
    } else if (key == "stall") {
      out.stall_timeout_s = parse_seconds(value, where);
    } else if (key == "bind") {
      out.bind = parse_bind(value, where);
    } else if (key == "port_min") {
      out.port_min = parse_port(value, where);
    } else if (key == "port_max") {
      out.port_max = parse_port(value, where);
    } else if (key == "log_dir") {
      if (value.empty()) {
        throw UsageError(fmt::format("{}: log_dir is empty; give a folder or leave the key out", where));
      }
      out.log_dir = std::string(value);
    } else if (key == "strict") {
      out.strict = parse_bool(value, where);
    } else if (key == "on_rank_loss") {
      out.on_rank_loss = parse_rank_loss(value, where);
    } else {
      throw UsageError(
          fmt::format("{}: unknown key {}; known keys: timeout, stall, bind, port_min, port_max, "
                      "log_dir, strict, on_rank_loss",
                      where, quote_short(key)));
    }
  }
  if (out.port_min > out.port_max) {
    throw UsageError(fmt::format("plugstack.conf: port_min ({}) is above port_max ({})", out.port_min, out.port_max));
  }
  return out;
}

}  // namespace mgpr::spank
