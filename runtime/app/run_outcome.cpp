#include "app/run_outcome.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "tasks/task_output.hpp"

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

Outcome agree_on_outcome(Communicator& communicator, const RankResults& own, std::span<const Tile> tiles,
                         TileResults& done, RasterFailures& failed) {
  for (const auto& text : communicator.all_gather(encode_results(own.results))) decode_results(text, done);
  for (const auto& text : communicator.all_gather(encode_failures(own.failures))) decode_failures(text, failed);
  if (done.size() == tiles.size()) return Outcome::kComplete;
  const bool rest_failed = std::all_of(tiles.begin(), tiles.end(), [&](const Tile& tile) {
    return done.contains(tile.id) || failed.contains(tile.id.image);
  });
  return rest_failed ? Outcome::kRastersFailed : Outcome::kStopped;
}

}  // namespace mgpr::runtime
