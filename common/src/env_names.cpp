#include "mgpr/env_names.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "mgpr/error.hpp"

namespace mgpr {
namespace {

std::optional<int> int_variable(const char* name) {
  const char* raw = std::getenv(name);
  if (raw == nullptr) return std::nullopt;
  const std::string_view text(raw);
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    throw UsageError(fmt::format("environment variable {}='{}' is not a whole number >= 0; unset it or "
                                 "launch with srun --mgpr, which sets it",
                                 name, text));
  }
  return value;
}

}  // namespace

std::optional<RankEnvironment> rank_environment_from_env() {
  RankEnvironment out;
  const auto rank = int_variable(env::kRank);
  const auto world = int_variable(env::kWorldSize);
  if (rank && world) {
    out.rank = *rank;
    out.world_size = *world;
    out.local_rank = int_variable(env::kLocalRank).value_or(*rank);
    out.local_world_size = int_variable(env::kLocalWorldSize).value_or(*world);
    out.node_rank = int_variable(env::kNodeRank).value_or(0);
    if (const char* addr = std::getenv(env::kMasterAddr)) out.master_addr = addr;
    out.master_port = int_variable(env::kMasterPort).value_or(0);
  } else if (const auto procid = int_variable(env::kSlurmProcId)) {
    out.rank = *procid;
    out.world_size = int_variable(env::kSlurmNtasks).value_or(1);
    out.local_rank = int_variable(env::kSlurmLocalId).value_or(0);
    out.node_rank = int_variable(env::kSlurmNodeId).value_or(0);
    out.local_world_size = out.world_size;
    out.from_slurm_only = true;
  } else {
    return std::nullopt;
  }
  if (out.world_size < 1 || out.rank >= out.world_size) {
    throw UsageError(fmt::format("rank {} does not fit a world of {} ranks: check RANK and WORLD_SIZE", out.rank,
                                 out.world_size));
  }
  return out;
}

}  // namespace mgpr
