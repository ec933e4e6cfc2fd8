#include "mgpr/env_names.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>
#include <string_view>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr {
namespace {

std::optional<int> int_variable(const char* name) {
  const char* raw = std::getenv(name);
  if (raw == nullptr) return std::nullopt;
  const auto value = parse_number<int>(raw, 0, std::numeric_limits<int>::max());
  if (!value) {
    throw UsageError(
        fmt::format("environment variable {}={} is not a whole number >= 0; unset it or "
                    "launch with srun --mgpr, which sets it",
                    name, quote_short(raw)));
  }
  return value;
}

// When a plain srun (no --mgpr) sets no MASTER_PORT, every rank derives this one.
constexpr int kPlainSrunPortMin = 20000;
constexpr int kPlainSrunPortMax = 28999;

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

int derive_master_port(std::uint32_t job_id, std::uint32_t step_id, int port_min, int port_max) {
  const auto range = static_cast<std::uint64_t>(port_max - port_min + 1);
  // 97 is prime to every range size a site would pick that is not a multiple of 97, so
  // consecutive jobs land 97 ports apart, away from each other's first steps.
  const std::uint64_t offset = (std::uint64_t{job_id} * 97U + step_id) % range;
  return port_min + static_cast<int>(offset);
}

std::optional<std::string> device_for_rank(std::span<const std::string> devices, int local_rank) {
  if (devices.empty() || local_rank < 0) return std::nullopt;
  if (devices.size() == 1) return devices.front();
  return devices[static_cast<std::size_t>(local_rank) % devices.size()];
}

EnvAssignments torchrun_environment(const RankEnvironment& ranks) {
  return {
      {env::kRank, std::to_string(ranks.rank)},
      {env::kWorldSize, std::to_string(ranks.world_size)},
      {env::kLocalRank, std::to_string(ranks.local_rank)},
      {env::kLocalWorldSize, std::to_string(ranks.local_world_size)},
      {env::kNodeRank, std::to_string(ranks.node_rank)},
      {env::kGroupRank, std::to_string(ranks.node_rank)},
      {env::kMasterAddr, ranks.master_addr},
      {env::kMasterPort, std::to_string(ranks.master_port)},
  };
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
    const auto job = static_cast<std::uint32_t>(int_variable(env::kSlurmJobId).value_or(0));
    const auto step = static_cast<std::uint32_t>(int_variable(env::kSlurmStepId).value_or(0));
    out.master_port =
        int_variable(env::kMasterPort).value_or(derive_master_port(job, step, kPlainSrunPortMin, kPlainSrunPortMax));
  } else {
    return std::nullopt;
  }
  if (out.world_size < 1 || out.rank >= out.world_size) {
    throw UsageError(
        fmt::format("rank {} does not fit a world of {} ranks: check RANK and WORLD_SIZE", out.rank, out.world_size));
  }
  return out;
}

}  // namespace mgpr
