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

// For the refusal: the same batch_size may fit as 8-bit tiles and not as float32 ones.
const char* travels_as(std::optional<RawSample> raw) {
  if (!raw) return "float32";
  return *raw == RawSample::kUInt8 ? "8-bit samples" : "16-bit samples";
}

}  // namespace

std::uint64_t tile_host_bytes(const HostTiles& tiles) {
  if (!tiles.raw) return static_cast<std::uint64_t>(float_tile_bytes(tiles.tile_size, tiles.channels));
  const auto plane = static_cast<std::uint64_t>(tiles.tile_size) * static_cast<std::uint64_t>(tiles.tile_size);
  const auto channels = static_cast<std::uint64_t>(std::max(tiles.channels, 1));
  return plane * channels * raw_sample_size(*tiles.raw) + plane;
}

std::uint64_t pipeline_host_bytes(const InFlightTiles& in_flight, const HostTiles& tiles) {
  auto bytes = static_cast<std::uint64_t>(in_flight.total()) * tile_host_bytes(tiles);
  if (tiles.raw && tiles.float_pass_tiles > 0) {
    bytes += static_cast<std::uint64_t>(tiles.float_pass_tiles) *
             static_cast<std::uint64_t>(float_tile_bytes(tiles.tile_size, tiles.channels));
  }
  return bytes;
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

void check_memory_budget(const InFlightTiles& in_flight, const HostTiles& tiles, std::optional<std::uint64_t> limit) {
  if (!limit) return;
  const auto needed = pipeline_host_bytes(in_flight, tiles);
  if (needed <= *limit) return;
  throw UsageError(fmt::format(
      "batch_size={} with tile_size={} ({} band{} as {}) needs about {:.1f} GiB of host memory for the tiles in "
      "flight alone, more than the {:.1f} GiB this rank may use; lower batch_size or tile_size (or ask Slurm for "
      "more memory with --mem)",
      in_flight.batch_size, tiles.tile_size, tiles.channels, tiles.channels == 1 ? "" : "s", travels_as(tiles.raw),
      static_cast<double>(needed) / kGiB, static_cast<double>(*limit) / kGiB));
}

}  // namespace mgpr::runtime
