// Every tile processed exactly once across 1, 2 and 3 real rank processes, started by
// run_local_ranks and joined through the local rendezvous, for both sharding modes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <set>
#include <sstream>

#include "support/process.hpp"

namespace mgpr::test {
namespace {

constexpr int kTiles = 47;  // not a multiple of 2 or 3: ranks get unequal shares

std::vector<std::string> tile_lines(const fs::path& file) {
  std::vector<std::string> out;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("tile ")) out.push_back(line);
  }
  return out;
}

int column_of(const std::string& tile_line) {  // "tile IMAGE ROW COLUMN"
  return std::stoi(tile_line.substr(tile_line.rfind(' ') + 1));
}

class Sharding : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(Sharding, UnionIsEveryTileOnce) {
  const auto [ranks, mode] = GetParam();
  const TempDir dir;
  const auto result =
      run({MGPR_COMM_RANK_EXE, "launch", std::to_string(ranks), "cpu", "--", "out=" + dir.path().string(),
           "sharding=" + mode, fmt::format("tiles={}", kTiles), "threads=3", "delay_ms=2", "timeout=30"},
          {}, dir.path(), std::chrono::seconds(90));
  ASSERT_EQ(result.code, 0) << result.err;

  std::multiset<std::string> seen;
  std::int64_t claims = 0;  // the requests of the feed every rank's communicator counted
  for (int r = 0; r < ranks; ++r) {
    const auto text = read_text(dir.path() / fmt::format("rank-{}.txt", r));
    if (const auto at = text.find("claims "); at != std::string::npos) claims += std::stoll(text.substr(at + 7));
    const auto lines = tile_lines(dir.path() / fmt::format("rank-{}.txt", r));
    if (mode == "static") {
      // Strided: rank r owns exactly the tiles r, r + ranks, ...
      std::set<int> columns;
      for (const auto& line : lines) columns.insert(column_of(line));
      std::set<int> expected;
      for (int c = r; c < kTiles; c += ranks) expected.insert(c);
      EXPECT_EQ(columns, expected) << "rank " << r;
    }
    seen.insert(lines.begin(), lines.end());
  }
  std::multiset<std::string> expected;
  for (int c = 0; c < kTiles; ++c) expected.insert(fmt::format("tile 0 0 {}", c));
  EXPECT_EQ(seen, expected) << "missing or duplicated tiles";
  if (mode == "dynamic" && ranks > 1) {
    // A claim a lease of several tiles, and one past the end on each rank, as its
    // communicator counted them: far fewer requests than tiles.
    // (47 tiles are mostly the guided tail of one-tile leases: TileFeed.* has a long run.)
    EXPECT_GE(claims, ranks + 1);
    EXPECT_LT(claims, kTiles);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Sharding,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values("static", "dynamic")),
                         [](const auto& test_info) {
                           return fmt::format("{}_{}_ranks", std::get<1>(test_info.param),
                                              std::get<0>(test_info.param));
                         });

}  // namespace
}  // namespace mgpr::test
