// Interrupted runs resume: a detect run over 2 local ranks is stopped midway (SIGTERM
// to every rank, then SIGKILL to one), run again on the same output, and must end with
// the same files as a run that was never interrupted, having skipped the tiles already
// done. Final files must never appear while the run is incomplete. The same for the
// polygons of task=segment, joined from the pieces of both runs, and for the crops'
// classes of task=detect with classify_model=.
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <ogrsf_frmts.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <thread>

#include "mgpr/process.hpp"
#include "resume/tile_journal.hpp"
#include "resume_support.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::test::Finished;
using mgpr::test::Process;
using mgpr::test::TempDir;

using mgpr::test::resume::journaled_tiles;
using mgpr::test::resume::layer_content;
using mgpr::test::resume::ranks_of;
using mgpr::test::resume::tiles_processed;
using mgpr::test::resume::wait_for;

TEST(Resume, AnInterruptedRunFinishesWithTheFilesOfAnUninterruptedOne) {
  TempDir dir;
  const auto image = dir.path() / "field.tif";
  std::vector<std::string> make_image{MGPR_TEST_IMAGE, image.string(), "--width", "400", "--height", "272"};
  for (const auto* square : {"10,10,8", "44,20,10", "150,100,12", "390,200,14", "300,265,9"}) {
    make_image.insert(make_image.end(), {"--square", square});
  }
  ASSERT_EQ(mgpr::run_command(make_image).exit_code, 0);
  // Each forward pass burns ~0.1 s (600 rounds on the 2-core CI machine; 60 took ~7 ms,
  // and the whole second run could finish inside the test's 50 ms poll) so the run
  // lasts long enough to be interrupted twice.
  const auto model = dir.path() / "slow.pt";
  ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, "detector", model.string(), "--slow", "600"}).exit_code, 0);

  const auto run = [&](const fs::path& output, const std::string& name) {
    return std::make_unique<Process>(
        std::vector<std::string>{MGPR_BINARY, image.string(), "task=detect", "model=" + model.string(), "tile_size=64",
                                 "overlap=16", "batch_size=2", "gpus=2", "accelerator=cpu", "threads=1", "workers=1",
                                 "output_dir=" + output.string()},
        std::map<std::string, std::string>{}, dir.path(), name);
  };
  constexpr int kTiles = 8 * 6;  // columns start 0, 48, ..., 336; rows 0, 48, ..., 208
  const auto reference = dir.path() / "uninterrupted";
  const auto complete = run(reference, "reference")->wait(std::chrono::seconds(300));
  ASSERT_EQ(complete.code, 0) << complete.out << complete.err;
  ASSERT_EQ(tiles_processed(complete.out), kTiles) << complete.out;

  const auto output = dir.path() / "interrupted";
  const auto detections = output / "field_detections.csv";
  {
    auto first = run(output, "first");
    ASSERT_TRUE(wait_for([&] { return journaled_tiles(output) >= 6; }, std::chrono::seconds(120)));
    for (const pid_t rank : ranks_of(first->pid())) ::kill(rank, SIGTERM);
    const auto stopped = first->wait(std::chrono::seconds(60));
    EXPECT_EQ(stopped.code, 3) << stopped.out << stopped.err;
    EXPECT_NE(stopped.out.find("# stopped:"), std::string::npos) << stopped.out;
  }
  EXPECT_FALSE(fs::exists(detections)) << "an interrupted run left a final file";
  const int after_first = journaled_tiles(output);
  ASSERT_GE(after_first, 6);
  ASSERT_LT(after_first, kTiles);
  {
    auto second = run(output, "second");
    ASSERT_TRUE(wait_for([&] { return journaled_tiles(output) >= after_first + 6; }, std::chrono::seconds(120)));
    const auto ranks = ranks_of(second->pid());
    ASSERT_FALSE(ranks.empty());
    ::kill(ranks.front(), SIGKILL);
    const auto killed = second->wait(std::chrono::seconds(90));
    EXPECT_NE(killed.code, 0) << killed.out << killed.err;
  }
  EXPECT_FALSE(fs::exists(detections)) << "an interrupted run left a final file";
  const int after_second = journaled_tiles(output);
  ASSERT_LT(after_second, kTiles) << "the run was not interrupted early enough to test resuming";

  const auto last = run(output, "last")->wait(std::chrono::seconds(300));
  ASSERT_EQ(last.code, 0) << last.out << last.err;
  EXPECT_NE(last.out.find("# resuming: " + std::to_string(after_second) + " of " + std::to_string(kTiles)),
            std::string::npos)
      << last.out;
  EXPECT_EQ(tiles_processed(last.out), kTiles - after_second) << last.out;
  EXPECT_EQ(mgpr::test::read_text(detections), mgpr::test::read_text(reference / "field_detections.csv"));
  EXPECT_EQ(layer_content(output / "field_detections.gpkg"), layer_content(reference / "field_detections.gpkg"));
  EXPECT_FALSE(fs::exists(output / ".mgpr-journal")) << "a finished run keeps no journal";
  // The temporary files the killed rank left (rank 0 writes while the tiles run) are gone.
  for (const auto& entry : fs::directory_iterator(output)) {
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos) << entry.path();
  }
}

// A journal line for a tile the inputs do not have (hand-edited, damaged) is
// never trusted. Counted, it made every rerun end "stopped" (exit 3, requeued forever).
TEST(Resume, AJournalLineForATileTheInputsDoNotHaveIsIgnored) {
  TempDir dir;
  const auto image = dir.path() / "field.tif";
  ASSERT_EQ(
      mgpr::run_command({MGPR_TEST_IMAGE, image.string(), "--width", "200", "--height", "144", "--square", "20,20,10"})
          .exit_code,
      0);
  const auto model = dir.path() / "slow.pt";
  ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, "detector", model.string(), "--slow", "600"}).exit_code, 0);
  const auto output = dir.path() / "out";
  const std::vector<std::string> argv{MGPR_BINARY,
                                      image.string(),
                                      "task=detect",
                                      "model=" + model.string(),
                                      "tile_size=64",
                                      "overlap=16",
                                      "batch_size=2",
                                      "accelerator=cpu",
                                      "threads=1",
                                      "workers=1",
                                      "output_dir=" + output.string()};
  {
    // One rank, stopped after its first tiles: a journal for these very inputs.
    Process first(argv, {}, dir.path(), "first");
    ASSERT_TRUE(wait_for([&] { return journaled_tiles(output) >= 2; }, std::chrono::seconds(120)));
    ::kill(first.pid(), SIGTERM);
    ASSERT_EQ(first.wait(std::chrono::seconds(60)).code, 3);
  }
  std::optional<fs::path> journal;
  for (const auto& entry : fs::recursive_directory_iterator(output / ".mgpr-journal")) {
    if (entry.path().extension() == ".tiles") journal = entry.path();
  }
  ASSERT_TRUE(journal.has_value());
  std::ofstream(*journal, std::ios::app) << mgpr::runtime::format_result_line({0, 99, 99}, "forged");

  const auto last = mgpr::test::run(argv, {}, dir.path(), std::chrono::seconds(300));
  EXPECT_EQ(last.code, 0) << last.out << last.err;
  EXPECT_NE(last.err.find("1 result(s) in the journal"), std::string::npos) << last.err;
  EXPECT_TRUE(fs::exists(output / "field_detections.csv")) << last.out << last.err;
}

}  // namespace

namespace {

// task=segment with polygons=true: a resumed run's polygons are those of an uninterrupted
// run, shapes whose pieces came from the stopped run's journal and from the new one
// joined as one.
// The two output folders of `arguments` (mgpr's over 2 ranks, output_dir left out): one
// run to the end ("uninterrupted"), one stopped by SIGTERM once `stop_after` tiles were
// journaled and run again to the end ("interrupted"), the rerun doing only the tiles the
// first part left. `final_file` (in the output folder) must not exist after the stop.
struct TwoRuns {
  fs::path reference;
  fs::path resumed;
};
TwoRuns stop_once_and_resume(const TempDir& dir, const std::vector<std::string>& arguments, int tiles, int stop_after,
                             const std::string& final_file) {
  const auto run = [&](const fs::path& output, const std::string& name) {
    auto argv = arguments;
    argv.insert(argv.begin(), MGPR_BINARY);
    argv.push_back("output_dir=" + output.string());
    return std::make_unique<Process>(argv, std::map<std::string, std::string>{}, dir.path(), name);
  };
  const TwoRuns runs{dir.path() / "uninterrupted", dir.path() / "interrupted"};
  const auto complete = run(runs.reference, "reference")->wait(std::chrono::seconds(300));
  EXPECT_EQ(complete.code, 0) << complete.out << complete.err;
  {
    auto first = run(runs.resumed, "first");
    EXPECT_TRUE(wait_for([&] { return journaled_tiles(runs.resumed) >= stop_after; }, std::chrono::seconds(120)));
    for (const pid_t rank : ranks_of(first->pid())) ::kill(rank, SIGTERM);
    const auto stopped = first->wait(std::chrono::seconds(60));
    EXPECT_EQ(stopped.code, 3) << stopped.out << stopped.err;
  }
  EXPECT_FALSE(fs::exists(runs.resumed / final_file)) << "an interrupted run left a final file";
  const int after_first = journaled_tiles(runs.resumed);
  EXPECT_LT(after_first, tiles) << "the run was not interrupted early enough to test resuming";
  const auto last = run(runs.resumed, "last")->wait(std::chrono::seconds(300));
  EXPECT_EQ(last.code, 0) << last.out << last.err;
  EXPECT_EQ(tiles_processed(last.out), tiles - after_first) << last.out;
  return runs;
}

TEST(Resume, PolygonsOfAResumedSegmentRunAreThoseOfAnUninterruptedOne) {
  TempDir dir;
  const auto image = dir.path() / "fields.tif";
  std::vector<std::string> make_image{MGPR_TEST_IMAGE, image.string(), "--width", "400", "--height", "272"};
  for (const auto* square : {"30,30,50", "130,90,60", "300,150,70", "200,200,40", "20,220,30"}) {
    make_image.insert(make_image.end(), {"--square", square});
  }
  ASSERT_EQ(mgpr::run_command(make_image).exit_code, 0);
  const auto model = dir.path() / "slow-segmenter.pt";
  ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, "segmenter", model.string(), "--slow", "600"}).exit_code, 0);
  const auto runs =
      stop_once_and_resume(dir,
                           {image.string(), "task=segment", "model=" + model.string(), "polygons=true", "tile_size=64",
                            "overlap=16", "batch_size=2", "gpus=2", "accelerator=cpu", "threads=1", "workers=1"},
                           8 * 6, 10, "fields_polygons.gpkg");
  ASSERT_FALSE(HasFailure());
  const auto polygons = layer_content(runs.resumed / "fields_polygons.gpkg");
  EXPECT_EQ(polygons, layer_content(runs.reference / "fields_polygons.gpkg"));
  EXPECT_EQ(std::count(polygons.begin(), polygons.end(), '\n'), 5) << polygons;
  EXPECT_EQ(mgpr::test::read_text(runs.resumed / "fields_polygons.csv"),
            mgpr::test::read_text(runs.reference / "fields_polygons.csv"));
}

// The crops' classes travel in the journal with their boxes: the tiles the first part
// finished are not run again (nor their crops classified), and the files are the
// uninterrupted run's.
TEST(Resume, CropClassesOfAResumedDetectRunAreThoseOfAnUninterruptedOne) {
  TempDir dir;
  const auto image = dir.path() / "crowns.tif";
  std::vector<std::string> make_image{MGPR_TEST_IMAGE, image.string(), "--width", "400", "--height", "272"};
  for (const auto* square : {"10,10,8", "44,20,10,250", "150,100,12", "390,200,14,250", "300,250,9,250"}) {
    make_image.insert(make_image.end(), {"--square", square});
  }
  ASSERT_EQ(mgpr::run_command(make_image).exit_code, 0);
  const auto detector = dir.path() / "slow-detector.pt";
  ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, "detector", detector.string(), "--slow", "600"}).exit_code, 0);
  const auto classifier = dir.path() / "colours.pt";
  ASSERT_EQ(mgpr::run_command(
                {MGPR_TEST_MODEL, "last-band", classifier.string(), "--card",
                 R"({"mgpr_card": 1, "task": "classify", "tile_size": 16, "class_names": ["tinted", "white"]})"})
                .exit_code,
            0);
  const auto runs = stop_once_and_resume(
      dir,
      {image.string(), "task=detect", "model=" + detector.string(), "classify_model=" + classifier.string(),
       "tile_size=64", "overlap=16", "batch_size=2", "gpus=2", "accelerator=cpu", "threads=1", "workers=1"},
      8 * 6, 6, "crowns_detections.csv");
  ASSERT_FALSE(HasFailure());
  const auto table = mgpr::test::read_text(runs.resumed / "crowns_detections.csv");
  EXPECT_EQ(table, mgpr::test::read_text(runs.reference / "crowns_detections.csv"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 6) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), ','), std::count(table.begin(), table.end(), '\n') * 17) << table;
  for (const auto* name : {",white,", ",tinted,"}) EXPECT_NE(table.find(name), std::string::npos) << table;
  EXPECT_EQ(layer_content(runs.resumed / "crowns_detections.gpkg"),
            layer_content(runs.reference / "crowns_detections.gpkg"));
}

}  // namespace
