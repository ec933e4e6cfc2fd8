// The resume journal: what one run appends, the next reads back; a line cut short by a
// kill, or one that is not a journal line, is ignored rather than trusted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "resume/tile_journal.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::runtime::remove_journals;
using mgpr::runtime::TileId;
using mgpr::runtime::TileJournal;

// A folder of that name that does not exist yet: the journal makes its own.
fs::path scratch(const std::string& name) { return mgpr::test::program_temp_dir().path() / name; }

TEST(TileJournal, WhatRanksAppendIsReadBackFromEveryRanksFile) {
  const auto dir = scratch("ranks");
  {
    TileJournal rank0(dir, 0);
    TileJournal rank1(dir, 1);
    rank0.append({0, 0, 0}, "1 0.5 2;");
    rank1.append({0, 0, 1}, "");
    rank0.flush();
    rank1.flush();
    rank0.append({1, 2, 3}, "label with spaces");
  }  // the destructor writes what is still pending
  const auto results = mgpr::runtime::read_journals(dir);
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results.at(TileId{0, 0, 0}), "1 0.5 2;");
  EXPECT_EQ(results.at(TileId{0, 0, 1}), "");
  EXPECT_EQ(results.at(TileId{1, 2, 3}), "label with spaces");
  {
    TileJournal again(dir, 0);  // a later run appends to the same file
    again.append({0, 5, 5}, "x");
  }
  EXPECT_EQ(mgpr::runtime::read_journals(dir).size(), 4U);
  fs::remove_all(dir.parent_path());
}

TEST(TileJournal, CutAndForeignLinesAreIgnored) {
  mgpr::runtime::TileResults results;
  mgpr::runtime::parse_result_lines("0 1 2\tok\nnot a journal line\n3 x 4\tbad id\n0 2 2\tcut by a kill", results);
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results.at(TileId{0, 1, 2}), "ok");
}

TEST(TileJournal, TheFirstResultOfATileWins) {
  mgpr::runtime::TileResults results;
  mgpr::runtime::parse_result_lines(
      mgpr::runtime::format_result_line({0, 1, 1}, "first") + mgpr::runtime::format_result_line({0, 1, 1}, "second"),
      results);
  EXPECT_EQ(results.at(TileId{0, 1, 1}), "first");
}

TEST(TileJournal, AnotherKeyGetsAnotherFolder) {
  mgpr::runtime::JournalKey key;
  key.output_dir = "mgpr_output";
  key.settings = {{"task", "classify"}, {"tile_size", "1024"}};
  const auto first = mgpr::runtime::journal_dir(key);
  EXPECT_EQ(first, mgpr::runtime::journal_dir(key)) << "stable for the same run";
  EXPECT_EQ(first.parent_path(), fs::path("mgpr_output") / ".mgpr-journal");
  auto other = key;
  other.settings[1].second = "512";
  EXPECT_NE(mgpr::runtime::journal_dir(other), first);
  other = key;
  other.rasters = {"a.tif"};
  EXPECT_NE(mgpr::runtime::journal_dir(other), first);
}

// The key of an mgpr that recorded no settings, as it was: a rewritten model, another run.
TEST(TileJournal, ARewrittenModelIsAnotherRunForTheLegacyKey) {
  const auto model = scratch("rewritten") / "model.pt";
  fs::create_directories(model.parent_path());
  std::ofstream(model) << "first";
  mgpr::runtime::LegacyJournalKey key;
  key.settings = "task=detect";
  key.model = model.string();
  key.rasters = {"a.tif"};
  const auto before = mgpr::runtime::legacy_journal_dir(key);
  std::ofstream(model) << "second, longer";
  EXPECT_NE(mgpr::runtime::legacy_journal_dir(key), before);
}

// One raster rewritten among many (a corrupt tile replaced) costs its own results only:
// the folder stays, and the results of the changed raster are dropped on resume.
TEST(TileJournal, ARewrittenRasterLosesOnlyItsOwnResults) {
  const auto folder = scratch("rewritten-raster");
  fs::create_directories(folder);
  const std::vector<std::string> rasters{(folder / "a.tif").string(), (folder / "b.tif").string(),
                                         (folder / "c.tif").string()};
  for (const auto& raster : rasters) std::ofstream(raster) << "first";
  mgpr::runtime::JournalKey key;
  key.output_dir = folder;  // the journal in the test's folder, not the working one
  key.settings = {{"task", "detect"}};
  key.rasters = rasters;
  const auto dir = mgpr::runtime::journal_dir(key);
  mgpr::runtime::record_raster_identities(dir, rasters);
  std::ofstream(rasters[1]) << "second, longer";
  EXPECT_EQ(mgpr::runtime::journal_dir(key), dir);
  mgpr::runtime::TileResults results{
      {TileId{0, 0, 0}, "a"}, {TileId{1, 0, 0}, "b"}, {TileId{1, 0, 1}, "b"}, {TileId{2, 0, 0}, "c"}};
  EXPECT_EQ(mgpr::runtime::drop_results_of_changed_rasters(results, dir, rasters), std::vector<int>{1});
  EXPECT_EQ(results.size(), 2U);
  EXPECT_FALSE(results.contains(TileId{1, 0, 0}));
  // Without a record (an older journal), nothing is dropped.
  auto untouched = results;
  EXPECT_TRUE(mgpr::runtime::drop_results_of_changed_rasters(untouched, folder / "none", rasters).empty());
  EXPECT_EQ(untouched, results);
}

TEST(TileJournal, RemovingARunsJournalKeepsOtherRunsAndNeverFollowsLinks) {
  const auto parent = scratch("remove") / ".mgpr-journal";
  const auto kept_target = scratch("remove-target") / "precious.txt";
  fs::create_directories(kept_target.parent_path());
  std::ofstream(kept_target) << "keep me";
  {
    TileJournal ours(parent / "run-a", 0);
    TileJournal theirs(parent / "run-b", 0);
    ours.append({0, 0, 0}, "x");
    theirs.append({0, 0, 0}, "y");
  }
  fs::create_symlink(kept_target, parent / "run-a" / "link.tiles");

  EXPECT_EQ(remove_journals(parent / "run-a"), "");
  EXPECT_FALSE(fs::exists(parent / "run-a"));
  EXPECT_TRUE(fs::exists(parent / "run-b" / "rank-0.tiles")) << "another run's journal was removed";
  EXPECT_TRUE(fs::exists(kept_target)) << "the link's target was removed";

  EXPECT_EQ(remove_journals(parent / "run-b"), "");
  EXPECT_FALSE(fs::exists(parent)) << "the emptied .mgpr-journal folder stays";
  EXPECT_EQ(remove_journals(parent / "run-b"), "") << "a journal already gone is not an error";
}

TEST(TileJournal, AnUnwritableFolderIsNamed) {
  try {
    TileJournal journal("/proc/mgpr-no-such-place", 0);
    FAIL() << "opening a journal in /proc succeeded";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/proc/mgpr-no-such-place/rank-0.tiles"), std::string::npos)
        << error.what();
  }
}

TEST(TileJournal, ResultsOfTilesTheInputsDoNotHaveAreDropped) {
  const std::vector<mgpr::runtime::Tile> tiles{{{0, 0, 0}, {}}, {{0, 0, 1}, {}}};
  mgpr::runtime::TileResults results{{{0, 0, 0}, "a"}, {{0, 0, 1}, "b"}, {{0, 99, 99}, "forged"}, {{3, 0, 0}, "x"}};
  EXPECT_EQ(mgpr::runtime::keep_results_of(results, tiles), 2U);
  EXPECT_EQ(results.size(), 2U);
  EXPECT_TRUE(results.contains({0, 0, 1}));
  EXPECT_EQ(mgpr::runtime::keep_results_of(results, tiles), 0U);
}

}  // namespace
