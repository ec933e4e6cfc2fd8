#include "app/run_outcome.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

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

std::string encode_tiles_done(const std::map<int, std::int64_t>& tiles_done) {
  std::string text;
  for (const auto& [image, count] : tiles_done) text += fmt::format("{} {}\n", image, count);
  return text;
}

void add_tiles_done(const std::string& text, std::vector<std::int64_t>& done) {
  std::istringstream lines(text);
  int image = 0;
  std::int64_t count = 0;
  while (lines >> image >> count) done.at(static_cast<std::size_t>(image)) += count;
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

Outcome agree_on_outcome(Communicator& communicator, const RankResults& own, std::span<const Tile> tiles,
                         std::vector<std::int64_t>& done, RasterFailures& failed) {
  const auto expected = tiles_per_image(tiles);
  done.resize(std::max(done.size(), expected.size()), 0);
  for (const auto& text : communicator.all_gather(encode_tiles_done(own.tiles_done))) add_tiles_done(text, done);
  for (const auto& text : communicator.all_gather(encode_failures(own.failures))) decode_failures(text, failed);
  bool complete = true;
  bool rest_failed = true;
  for (std::size_t image = 0; image < expected.size(); ++image) {
    if (done[image] == expected[image]) continue;
    complete = false;
    rest_failed = rest_failed && failed.contains(static_cast<int>(image));
  }
  if (complete) return Outcome::kComplete;
  return rest_failed ? Outcome::kRastersFailed : Outcome::kStopped;
}

}  // namespace mgpr::runtime
