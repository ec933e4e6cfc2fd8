// `mgpr` end to end under faults (ctest label faults, docs/reliability.md): the disk
// filling at each writer, two runs on one output folder at once.
#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

// A full disk while the GeoPackage was written gave kilobytes of SQLite's SQL
// and "database or disk is full". For each writer a tmpfs small enough to fill during
// it: exit 1, the disk named as full, a short message, no output that looks complete,
// and the journal kept for the rerun. (The COG and the quicklook: the next test.)
TEST_F(MgprCli, AFullDiskWhileWritingIsNamedAndLeavesNoCompleteLookingOutput) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs (CI runs as root)";
  const auto image = write_image("objects.tif", 512, 512);
  const auto detector = test_model("detector", "detector.pt");
  const auto segmenter = test_model("segmenter", "segmenter.pt");
  ASSERT_FALSE(HasFailure());
  struct Writer {
    std::string name;
    std::vector<std::string> arguments;
    std::string tmpfs_size;
    std::string complete_output;  // must not exist after the failure
  };
  const std::vector<Writer> writers{
      {"GeoPackage", {"model=" + detector.string(), "task=detect", "tile_size=64"}, "24k", "objects_detections.gpkg"},
      {"GeoTIFF pieces",
       {"model=" + segmenter.string(), "task=segment", "tile_size=64"},
       "24k",
       "objects_segmentation.vrt"},
      {"journal", {"model=builtin:resnet50", "tile_size=16"}, "8k", "objects_tiles.csv"},
  };
  for (const auto& writer : writers) {
    const auto full = path("full-disk-" + std::to_string(&writer - writers.data()));
    fs::create_directories(full);
    const auto options = "size=" + writer.tmpfs_size;
    if (::mount("tmpfs", full.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    auto arguments = writer.arguments;
    arguments.insert(arguments.begin(), image.string());
    arguments.push_back("accelerator=cpu");
    arguments.push_back("output_dir=" + full.string());
    const auto result = mgpr(arguments);
    const bool complete_looking = fs::exists(full / writer.complete_output);
    const bool journal_kept = fs::exists(full / ".mgpr-journal");
    ::umount(full.c_str());
    EXPECT_EQ(result.exit_code, 1) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "is full")) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "run the same command again")) << writer.name << ": " << result.err;
    EXPECT_LT(result.err.size(), 2000U) << writer.name << ": a message for people, not SQLite's SQL";
    EXPECT_FALSE(complete_looking) << writer.name << ": an output cut short must not look complete";
    EXPECT_TRUE(journal_kept) << writer.name << ": the finished tiles must survive for the rerun";
  }
}

// The COG and the quicklook are written last, from outputs already complete. The disk
// is sized from a run without them (its use, plus less than they take) to fill there:
// exit 1, the disk named as full, no COG or quicklook under its final name, and the
// outputs written before it (the VRT and its pieces; the CSV and GeoPackage) kept whole.
TEST_F(MgprCli, AFullDiskAtTheCogOrQuicklookKeepsTheOutputsWrittenBefore) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs (CI runs as root)";
  const auto image = write_image("last.tif", 512, 512);
  const auto detector = test_model("detector", "detector.pt");
  // Half the random pixels are class 1: a COG deflate cannot shrink below 8 KiB.
  const auto segmenter = test_model("segmenter", "half-segmenter.pt", {"--threshold", "0.5"});
  ASSERT_FALSE(HasFailure());
  struct LastWriter {
    std::string name;
    std::vector<std::string> arguments;
    std::string option;  // turns the last output on
    std::string last_output;
    std::vector<std::string> earlier_outputs;
    std::uintmax_t room;  // over the others' final use: their peak fits, the last output does not
  };
  const std::vector<LastWriter> writers{
      {"COG",
       {"model=" + segmenter.string(), "task=segment", "tile_size=128"},
       "cog=true",
       "last_segmentation.tif",
       {"last_segmentation.vrt", "last_segmentation/tile_r3_c3.tif"},
       12 << 10},  // the COG takes about 20 KiB; the journal's three files (a page each) are still there
      {"quicklook",
       {"model=" + detector.string(), "task=detect", "tile_size=128"},
       "quicklook=true",
       "last_quicklook.png",
       {"last_detections.csv", "last_detections.gpkg"},
       256 << 10},  // SQLite's journal needs room while the GeoPackage is written; the PNG takes 600 KiB
  };
  for (const auto& writer : writers) {
    const auto disk = path("last-disk-" + std::to_string(&writer - writers.data()));
    fs::create_directories(disk);
    auto arguments = writer.arguments;
    arguments.insert(arguments.begin(), image.string());
    arguments.push_back("accelerator=cpu");
    arguments.push_back("output_dir=" + disk.string());
    // Without the last output, on a roomy disk: how much the rest takes.
    if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    const auto without = mgpr(arguments);
    struct statvfs use {};
    ASSERT_EQ(::statvfs(disk.c_str(), &use), 0);
    ::umount(disk.c_str());
    ASSERT_EQ(without.exit_code, 0) << writer.name << ": " << without.err;
    const auto used = (use.f_blocks - use.f_bfree) * use.f_frsize;
    const auto size = "size=" + std::to_string(used + writer.room);
    ASSERT_EQ(::mount("tmpfs", disk.c_str(), "tmpfs", 0, size.c_str()), 0) << std::strerror(errno);
    arguments.push_back(writer.option);
    const auto result = mgpr(arguments);
    const bool last_exists = fs::exists(disk / writer.last_output);
    std::vector<std::string> earlier_missing;
    for (const auto& earlier : writer.earlier_outputs) {
      if (!fs::exists(disk / earlier)) earlier_missing.push_back(earlier);
    }
    const bool journal_kept = fs::exists(disk / ".mgpr-journal");
    ::umount(disk.c_str());
    EXPECT_EQ(result.exit_code, 1) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "is full")) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, writer.last_output)) << writer.name << ": names the file: " << result.err;
    EXPECT_LT(result.err.size(), 2000U) << writer.name;
    EXPECT_FALSE(last_exists) << writer.name << ": cut short, it must not look complete";
    EXPECT_TRUE(earlier_missing.empty()) << writer.name << ": lost " << testing::PrintToString(earlier_missing);
    EXPECT_TRUE(journal_kept) << writer.name << ": the finished tiles must survive for the rerun";
  }
}

// The fault suite: two runs of one job on one output folder at once (a job
// submitted twice) both finish, and the outputs are those of a single run: each file is
// written under a temporary name and renamed, and the shared journal's first result of
// a tile wins.
TEST_F(MgprCli, TwoRunsOnOneOutputFolderAtOnceGiveTheOutputsOfOne) {
  const auto image = write_image("twice.tif", 128, 128);
  const auto model = test_model("detector", "slow-detector.pt", {"--slow", "100"});
  ASSERT_FALSE(HasFailure());
  const auto run_in = [&](const fs::path& out) {
    return std::vector<std::string>{
        MGPR_BINARY,    image.string(), "model=" + model.string(), "task=detect",
        "tile_size=32", "batch_size=2", "accelerator=cpu",         "output_dir=" + out.string()};
  };
  const auto shared = path("shared-out");
  {
    mgpr::test::Process first(run_in(shared), {}, dir_, "first");
    mgpr::test::Process second(run_in(shared), {}, dir_, "second");
    const auto a = first.wait(std::chrono::seconds(300));
    const auto b = second.wait(std::chrono::seconds(300));
    EXPECT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(b.code, 0) << b.err;
  }
  const auto alone = path("alone-out");
  ASSERT_EQ(mgpr({image.string(), "model=" + model.string(), "task=detect", "tile_size=32", "batch_size=2",
                  "accelerator=cpu", "output_dir=" + alone.string()})
                .exit_code,
            0);
  EXPECT_EQ(read_text(shared / "twice_detections.csv"), read_text(alone / "twice_detections.csv"));
  EXPECT_FALSE(read_text(alone / "twice_detections.csv").empty());
}

}  // namespace
