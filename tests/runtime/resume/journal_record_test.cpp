// What a journal folder records of its run, and what a later run makes of the folders
// earlier runs left: a legacy folder (no record) taken over, the newest one with other
// settings named with what differs, the others listed, all removed once this run's
// outputs are complete.
#include "resume/journal_record.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "resume/run_journal.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::runtime::RunJournal;
using mgpr::runtime::Tile;
using mgpr::runtime::TileId;

// One raster of two tiles and an output folder's journal folders, in a folder of their own.
struct OutputFolder {
  fs::path folder;
  std::vector<std::string> rasters;
  std::vector<Tile> tiles{Tile{TileId{0, 0, 0}, {}}, Tile{TileId{0, 0, 1}, {}}};

  explicit OutputFolder(const std::string& name) : folder(mgpr::test::program_temp_dir().path() / name) {
    fs::create_directories(folder);
    rasters.push_back((folder / "a.tif").string());
    std::ofstream(rasters.back()) << "pixels";
  }
  [[nodiscard]] fs::path journal(const std::string& name) const { return folder / ".mgpr-journal" / name; }
  // A run's journal as `record` describes it, with `tiles` lines; no record: a legacy one.
  void write_journal(const std::string& name, const std::string& record, int lines) const {
    const RunJournal journal(this->journal(name), rasters, true, {record, {}});
    journal.begin();
    auto appender = journal.for_rank(0);
    for (int column = 0; column < lines; ++column) appender.append(TileId{0, 0, column}, "result");
  }
};

TEST(JournalRecord, ReadsBackWhatItWrote) {
  const auto text = mgpr::runtime::record_text({{"min_area", "100"}, {"precision", "bf16 autocast"}}, {"/a.tif"});
  EXPECT_EQ(text, "min_area=100\nprecision=bf16 autocast\nraster=/a.tif\n");
  const auto record = mgpr::runtime::parse_record(text);
  ASSERT_EQ(record.settings.size(), 2U);
  EXPECT_EQ(record.settings[1].second, "bf16 autocast");
  EXPECT_EQ(record.rasters, std::vector<std::string>{"/a.tif"});
}

TEST(JournalRecord, SaysWhatChangedKeyByKey) {
  using mgpr::runtime::parse_record;
  const auto earlier = parse_record("task=segment\nmin_area=100\nprecision=bf16\nraster=/a.tif\n");
  const auto now = parse_record("task=segment\nmin_area=0\nprecision=fp32\nraster=/a.tif\nraster=/b.tif\n");
  EXPECT_EQ(mgpr::runtime::describe_changes(earlier, now),
            "min_area 100 → 0, precision bf16 → fp32, inputs 1 rasters → 2");
  EXPECT_EQ(mgpr::runtime::describe_changes(earlier, now, 1), "min_area 100 → 0 and 2 more");
  EXPECT_EQ(mgpr::runtime::describe_changes(now, now), "nothing that changes a result");
}

TEST(JournalRecord, AFileIsIdentifiedByItsContent) {
  const OutputFolder output("content");
  const auto file = output.folder / "model.pt";
  std::ofstream(file) << "weights";
  const auto first = mgpr::runtime::file_content_identity(file);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->starts_with("7 bytes, fnv1a ")) << *first;
  fs::copy_file(file, output.folder / "copy.pt");
  EXPECT_EQ(mgpr::runtime::file_content_identity(output.folder / "copy.pt"), first);
  std::ofstream(file) << "Weights";
  EXPECT_NE(mgpr::runtime::file_content_identity(file), first);
  EXPECT_FALSE(mgpr::runtime::file_content_identity(output.folder / "none.pt").has_value());
}

// A journal an mgpr that recorded no settings left under the old fingerprint is this
// run's when nothing it held changed: resumed, and renamed to this run's folder.
TEST(JournalRecord, ALegacyJournalIsTakenOverAndRecorded) {
  const OutputFolder output("legacy");
  output.write_journal("0123456789abcdef", "", 2);
  const RunJournal journal(output.journal("new"), output.rasters, true,
                           {"min_area=0\n", output.journal("0123456789abcdef")});
  EXPECT_EQ(journal.done_tiles(output.tiles).results.size(), 2U);
  journal.begin();
  EXPECT_FALSE(fs::exists(output.journal("0123456789abcdef")));
  EXPECT_EQ(mgpr::test::read_text(output.journal("new") / "settings"), "min_area=0\n");
  const auto notes = journal.notes();
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("recorded no settings"), std::string::npos) << notes[0];
  // The next run finds it by its own name.
  EXPECT_EQ(RunJournal(output.journal("new"), output.rasters, true, {"min_area=0\n", {}})
                .done_tiles(output.tiles)
                .results.size(),
            2U);
}

// A folder under the legacy name that holds a record is another run's: not taken over.
TEST(JournalRecord, AFolderWithARecordIsNeverTakenForALegacyOne) {
  const OutputFolder output("recorded");
  output.write_journal("0123456789abcdef", "min_area=100\n", 2);
  const RunJournal journal(output.journal("new"), output.rasters, true,
                           {"min_area=0\n", output.journal("0123456789abcdef")});
  EXPECT_TRUE(journal.done_tiles(output.tiles).results.empty());
}

TEST(JournalRecord, AFreshStartNamesWhatDiffersFromTheEarlierRunAndListsTheOthers) {
  const OutputFolder output("afresh");
  output.write_journal("older", "min_area=5\nprecision=fp32\n", 1);
  output.write_journal("newest", "min_area=100\nprecision=bf16\n", 2);
  fs::last_write_time(output.journal("older") / "settings",
                      fs::last_write_time(output.journal("newest") / "settings") - std::chrono::hours(1));
  fs::last_write_time(output.journal("older") / "rank-0.tiles",
                      fs::last_write_time(output.journal("newest") / "settings") - std::chrono::hours(1));
  fs::last_write_time(output.journal("older") / "rasters.identity",
                      fs::last_write_time(output.journal("newest") / "settings") - std::chrono::hours(1));
  const RunJournal journal(output.journal("now"), output.rasters, true, {"min_area=0\nprecision=fp32\n", {}});
  EXPECT_TRUE(journal.done_tiles(output.tiles).results.empty());
  journal.begin();
  const auto notes = journal.notes();
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_EQ(notes[0],
            "not resuming the earlier run in this folder (2 tiles journaled): min_area 100 → 0, precision "
            "bf16 → fp32; starting afresh (its journal is kept at " +
                output.journal("newest").string() + " until this run's outputs are complete)");
  EXPECT_NE(notes[1].find("1 journal folder(s) of earlier runs"), std::string::npos) << notes[1];
  EXPECT_NE(notes[1].find("older (1 tiles)"), std::string::npos) << notes[1];

  // Complete: this run's journal goes, and the earlier runs' with it.
  EXPECT_EQ(journal.finish(), "");
  const auto removed = journal.remove_earlier();
  EXPECT_EQ(removed.folders.size(), 2U);
  EXPECT_EQ(removed.failures, "");
  EXPECT_FALSE(fs::exists(output.folder / ".mgpr-journal"));
}

// Another run on this output folder at the same time keeps its journal.
TEST(JournalRecord, AJournalWrittenSinceThisRunBeganIsKept) {
  const OutputFolder output("concurrent");
  const RunJournal journal(output.journal("now"), output.rasters, true, {"min_area=0\n", {}});
  journal.begin();
  output.write_journal("other", "min_area=100\n", 1);
  for (const auto& file : fs::directory_iterator(output.journal("other"))) {
    fs::last_write_time(file.path(), fs::file_time_type::clock::now() + std::chrono::hours(1));
  }
  EXPECT_TRUE(journal.remove_earlier().folders.empty());
  EXPECT_TRUE(fs::exists(output.journal("other")));
}

}  // namespace
