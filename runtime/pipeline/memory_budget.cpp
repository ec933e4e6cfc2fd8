#include "pipeline/memory_budget.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"
#include "mgpr/tile_limits.hpp"

namespace mgpr::runtime {
namespace {

// cgroup v2 says "max" for no limit; v1 a huge number.
std::optional<std::uint64_t> read_limit(const char* file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) return std::nullopt;
  return parse_number<std::uint64_t>(text);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::uint64_t pipeline_host_bytes(std::size_t tiles_in_flight, int tile_size, int channels) {
  return static_cast<std::uint64_t>(tiles_in_flight) *
         static_cast<std::uint64_t>(float_tile_bytes(tile_size, channels));
}

std::optional<std::uint64_t> memory_limit_bytes() {
  std::optional<std::uint64_t> limit;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) limit = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  for (const char* file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    if (const auto cgroup = read_limit(file)) limit = limit ? std::min(*limit, *cgroup) : *cgroup;
  }
  return limit;
}

void check_memory_budget(const InFlightTiles& in_flight, int tile_size, int channels,
                         std::optional<std::uint64_t> limit) {
  if (!limit) return;
  const auto needed = pipeline_host_bytes(in_flight.total(), tile_size, channels);
  if (needed <= *limit) return;
  throw UsageError(fmt::format(
      "batch_size={} with tile_size={} ({} band{}) needs about {:.1f} GiB of host memory for the tiles in flight "
      "alone, more than the {:.1f} GiB this rank may use; lower batch_size or tile_size (or ask Slurm for more "
      "memory with --mem)",
      in_flight.batch_size, tile_size, channels, channels == 1 ? "" : "s", static_cast<double>(needed) / kGiB,
      static_cast<double>(*limit) / kGiB));
}

}  // namespace mgpr::runtime
