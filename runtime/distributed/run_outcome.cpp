#include "distributed/run_outcome.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "mgpr/exit_codes.hpp"

namespace mgpr::runtime {

std::string encode_failures(const RasterFailures& failures) {
  std::string text;
  for (const auto& [image, reason] : failures) {
    std::string line = reason;
    std::replace_if(
        line.begin(), line.end(), [](char c) { return c == '\n' || c == '\t' || c == '\r'; }, ' ');
    text += fmt::format("{}\t{}\n", image, line);
  }
  return text;
}

void decode_failures(const std::string& text, RasterFailures& into) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    into.try_emplace(std::stoi(line.substr(0, tab)), line.substr(tab + 1));
  }
}

std::vector<std::int64_t> tiles_per_image(std::span<const Tile> tiles) {
  std::vector<std::int64_t> counts(1, 0);
  for (const auto& tile : tiles) {
    const auto image = static_cast<std::size_t>(tile.id.image);
    if (image >= counts.size()) counts.resize(image + 1, 0);
    ++counts[image];
  }
  return counts;
}

std::vector<std::int64_t> done_per_image(const TileResults& done, std::span<const Tile> tiles) {
  std::vector<std::int64_t> counts(tiles_per_image(tiles).size(), 0);
  for (const auto& [id, payload] : done) ++counts.at(static_cast<std::size_t>(id.image));
  return counts;
}

Outcome agree_on_outcome(Communicator& communicator, const RankResults& own, std::span<const Tile> tiles,
                         std::span<const std::int64_t> done_before, RasterFailures& failed, std::int64_t& done_total) {
  for (const auto& text : communicator.all_gather(encode_failures(own.failures))) decode_failures(text, failed);
  // Tiles in all, and outside the failed rasters: expected, then finished.
  const auto expected = tiles_per_image(tiles);
  std::int64_t expected_total = 0;
  std::int64_t expected_kept = 0;
  std::int64_t kept = 0;
  done_total = 0;
  for (std::size_t image = 0; image < expected.size(); ++image) {
    const bool lost = failed.contains(static_cast<int>(image));
    const auto before = image < done_before.size() ? done_before[image] : 0;
    expected_total += expected[image];
    done_total += before;
    if (!lost) {
      expected_kept += expected[image];
      kept += before;
    }
  }
  std::int64_t own_total = 0;
  std::int64_t own_kept = 0;
  for (const auto& [image, count] : own.tiles_done) {
    own_total += count;
    if (!failed.contains(image)) own_kept += count;
  }
  std::int64_t skipped = 0;
  for (const auto& text : communicator.all_gather(fmt::format("{} {} {}", own_total, own_kept, own.skipped))) {
    std::int64_t total = 0;
    std::int64_t outside_failed = 0;
    std::int64_t skipped_there = 0;
    std::istringstream(text) >> total >> outside_failed >> skipped_there;
    done_total += total;
    kept += outside_failed;
    skipped += skipped_there;
  }
  // No raster has more tiles finished than it has, so the sums tell each raster apart.
  if (done_total == expected_total) return Outcome::kComplete;
  if (kept == expected_kept) return Outcome::kRastersFailed;
  // A skipped tile of a raster that failed too is counted in neither.
  return skipped > 0 && kept + skipped >= expected_kept ? Outcome::kTilesSkipped : Outcome::kStopped;
}

int exit_status(Outcome outcome) {
  switch (outcome) {
    case Outcome::kComplete:
      return 0;
    case Outcome::kRastersFailed:
    case Outcome::kTilesSkipped:
      return kExitFailure;
    case Outcome::kStopped:
      break;
  }
  return kExitStopped;
}

}  // namespace mgpr::runtime
