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

std::string first_host(std::string_view host_list) {
  // The first entry ends at a comma outside brackets.
  int depth = 0;
  std::size_t end = 0;
  for (; end < host_list.size(); ++end) {
    if (host_list[end] == '[') ++depth;
    if (host_list[end] == ']') --depth;
    if (host_list[end] == ',' && depth == 0) break;
  }
  const auto entry = host_list.substr(0, end);
  const auto open = entry.find('[');
  if (open == std::string_view::npos) return std::string(entry);
  const auto close = entry.find(']', open);
  const auto ranges = entry.substr(open + 1, close - open - 1);
  const auto first = ranges.substr(0, ranges.find_first_of(",-"));
  return std::string(entry.substr(0, open)) + std::string(first) +
         (close == std::string_view::npos ? std::string() : std::string(entry.substr(close + 1)));
}

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
    out.local_world_size = int_variable(env::kSlurmNtasksPerNode).value_or(out.world_size);
    out.from_slurm_only = true;
    // A plain srun (no --mgpr): every rank derives the same address and port on its own.
    const char* nodes = std::getenv(env::kSlurmStepNodeList);
    if (nodes == nullptr) nodes = std::getenv(env::kSlurmJobNodeList);
    if (const char* addr = std::getenv(env::kMasterAddr)) {
      out.master_addr = addr;
    } else if (nodes != nullptr) {
      out.master_addr = first_host(nodes);
    }
    const auto job = int_variable(env::kSlurmJobId).value_or(0);
    const auto step = int_variable(env::kSlurmStepId).value_or(0);
    out.master_port = int_variable(env::kMasterPort).value_or(20000 + (job * 97 + step) % 9000);
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
