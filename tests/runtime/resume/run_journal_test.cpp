// The resume protocol in the order a run meets it: read what earlier runs finished, begin
// (an earlier journal removed when resume=false, raster identities recorded), append per
// rank, finish (the journal goes).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "resume/run_journal.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::runtime::RunJournal;
using mgpr::runtime::Tile;
using mgpr::runtime::TileId;

// Two rasters of two tiles each, written where the test can rewrite them.
struct TwoRasters {
  fs::path folder;
  std::vector<std::string> rasters;
  std::vector<Tile> tiles;

  explicit TwoRasters(const std::string& name) : folder(mgpr::test::program_temp_dir().path() / name) {
    fs::create_directories(folder);
    for (const auto* stem : {"a.tif", "b.tif"}) {
      rasters.push_back((folder / stem).string());
      std::ofstream(rasters.back()) << "pixels";
    }
    for (int image = 0; image < 2; ++image) {
      for (int column = 0; column < 2; ++column) tiles.push_back(Tile{TileId{image, 0, column}, {}});
    }
  }
  [[nodiscard]] fs::path journal() const { return folder / ".mgpr-journal" / "run"; }
};

// A run that appended `ids` on rank `rank`, begun as rank 0 begins it.
void run_once(const TwoRasters& inputs, bool resume, int rank, const std::vector<TileId>& ids) {
  const RunJournal journal(inputs.journal(), inputs.rasters, resume);
  journal.begin();
  auto appender = journal.for_rank(rank);
  for (const auto& id : ids) appender.append(id, "result");
}

TEST(RunJournal, AResumedRunFindsWhatEveryRankFinished) {
  const TwoRasters inputs("resumed");
  run_once(inputs, true, 0, {{0, 0, 0}});
  run_once(inputs, true, 1, {{1, 0, 1}});
  const RunJournal again(inputs.journal(), inputs.rasters, true);
  const auto done = again.done_tiles(inputs.tiles);
  EXPECT_EQ(done.results.size(), 2U);
  EXPECT_TRUE(done.results.contains(TileId{0, 0, 0}));
  EXPECT_TRUE(done.results.contains(TileId{1, 0, 1}));
  EXPECT_TRUE(done.changed_rasters.empty());
  EXPECT_EQ(done.foreign, 0U);
}

TEST(RunJournal, WithoutResumeNothingCountsAndBeginRemovesTheEarlierJournal) {
  const TwoRasters inputs("fresh");
  run_once(inputs, true, 0, {{0, 0, 0}, {0, 0, 1}});
  const RunJournal fresh(inputs.journal(), inputs.rasters, false);
  EXPECT_TRUE(fresh.done_tiles(inputs.tiles).results.empty());
  fresh.begin();
  EXPECT_TRUE(RunJournal(inputs.journal(), inputs.rasters, true).done_tiles(inputs.tiles).results.empty());
}

TEST(RunJournal, AChangedRastersTilesAreDoneAgainAndForeignTilesDropped) {
  const TwoRasters inputs("changed");
  run_once(inputs, true, 0, {{0, 0, 0}, {1, 0, 0}, {1, 7, 7}});
  std::ofstream(inputs.rasters[1], std::ios::app) << " rewritten";  // another size: another identity
  const auto done = RunJournal(inputs.journal(), inputs.rasters, true).done_tiles(inputs.tiles);
  EXPECT_EQ(done.changed_rasters, std::vector<int>{1});
  EXPECT_EQ(done.foreign, 0U);  // tile (1, 7, 7) went with its raster
  ASSERT_EQ(done.results.size(), 1U);
  EXPECT_TRUE(done.results.contains(TileId{0, 0, 0}));

  // The next run begins: the changed raster's old lines leave the journal before its new
  // identity is recorded, so they cannot come back as results; it appends a tile these
  // inputs do not have.
  run_once(inputs, true, 0, {{0, 9, 9}});
  const auto later = RunJournal(inputs.journal(), inputs.rasters, true).done_tiles(inputs.tiles);
  EXPECT_TRUE(later.changed_rasters.empty());
  EXPECT_EQ(later.foreign, 1U);
  EXPECT_FALSE(later.results.contains(TileId{0, 9, 9}));
  EXPECT_FALSE(later.results.contains(TileId{1, 0, 0}));
  EXPECT_TRUE(later.results.contains(TileId{0, 0, 0}));
}

TEST(RunJournal, FinishRemovesTheJournal) {
  const TwoRasters inputs("finished");
  run_once(inputs, true, 0, {{0, 0, 0}});
  const RunJournal journal(inputs.journal(), inputs.rasters, true);
  EXPECT_EQ(journal.finish(), "");
  EXPECT_FALSE(fs::exists(inputs.journal()));
  EXPECT_TRUE(journal.done_tiles(inputs.tiles).results.empty());
}

}  // namespace
