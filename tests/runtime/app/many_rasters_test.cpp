// Many rasters in one run, as users hold them: a folder of tiles, a list file
// and a quoted glob give the same run; a raster that turns out corrupt mid-run is named,
// the others finish, and a rerun does only what is missing.
#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

// Every per-raster classification CSV under `out`, by file name.
std::map<std::string, std::string> tile_csvs(const fs::path& out) {
  std::map<std::string, std::string> csvs;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().string().ends_with("_tiles.csv")) {
      std::ifstream in(entry.path());
      std::ostringstream text;
      text << in.rdbuf();
      csvs[entry.path().filename().string()] = text.str();
    }
  }
  return csvs;
}

// A compressed GeoTIFF whose header is whole and some blocks garbage: it opens, and fails
// when those tiles are read, as a file damaged in storage does.
void write_corrupt_copy(const fs::path& good, const fs::path& corrupt) {
  const auto made = run_command({"gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co",
                                 "BLOCKSIZE=128", good.string(), corrupt.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::fstream file(corrupt, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(file.tellg());
  // The middle blocks: the header and the last block stay whole, so the raster passes
  // the checks at start-up (which read its last block) and fails in the tile loop.
  file.seekp(static_cast<std::streamoff>(size * 45 / 100));
  file << std::string(size * 15 / 100, 'Z');
}

TEST_F(MgprCli, AFolderAListAndAQuotedGlobGiveTheSameRun) {
  const auto folder = path("many-inputs");
  fs::create_directories(folder);
  for (int i = 0; i < 10; ++i) {
    fs::rename(write_image("t" + std::to_string(i) + ".tif", 20 + i, 24), folder / ("t" + std::to_string(i) + ".tif"));
  }
  std::ofstream(folder / "readme.txt") << "not a raster\n";
  std::ofstream(path("many-inputs.txt")) << "# the survey's tiles\nmany-inputs/t0.tif\n\nmany-inputs\n";
  const std::vector<std::pair<std::string, std::string>> forms{{"folder", folder.string()},
                                                               {"list", "@" + path("many-inputs.txt").string()},
                                                               {"glob", (folder / "t*.tif").string()}};
  std::map<std::string, std::string> reference;
  for (const auto& [form, input] : forms) {
    const auto out = path("many-out-" + form);
    // One tile a batch: which tiles share a batch differs between runs of two ranks, and
    // a tile's mean may move in its last digits with its batch partners.
    const auto result =
        mgpr({input, "model=" + path("mean.pt").string(), "tile_size=16", "batch_size=1", "accelerator=cpu", "gpus=2",
              "threads=1", "workers=1", "outputs=per_raster", "output_dir=" + out.string()});
    ASSERT_EQ(result.exit_code, 0) << form << '\n' << result.out << result.err;
    EXPECT_TRUE(contains(result.out, "10 rasters,")) << form << ": one summary line, not a line per raster\n"
                                                     << result.out;
    const auto csvs = tile_csvs(out);
    EXPECT_EQ(csvs.size(), 10U) << form;
    if (reference.empty()) reference = csvs;
    EXPECT_EQ(csvs, reference) << form;
  }
}

TEST_F(MgprCli, ARasterCorruptMidRunIsNamedTheOthersFinishAndARerunDoesTheRest) {
  const auto folder = path("corrupt-run");
  fs::create_directories(folder);
  for (const auto* name : {"a", "b", "d"}) {
    fs::rename(write_image(std::string(name) + "-good.tif", 64, 64), folder / (std::string(name) + ".tif"));
  }
  const auto whole = write_image("c-whole.tif", 256, 256);
  write_corrupt_copy(whole, folder / "c.tif");
  ASSERT_FALSE(HasFailure());
  const auto out = path("corrupt-out");
  const std::vector<std::string> arguments{folder.string(),
                                           "model=" + path("mean.pt").string(),
                                           "tile_size=64",
                                           "accelerator=cpu",
                                           "gpus=2",
                                           "threads=1",
                                           "workers=1",
                                           "outputs=per_raster",
                                           "output_dir=" + out.string()};
  const auto failed = mgpr(arguments);
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_TRUE(contains(failed.out, "1 of 4 rasters could not be read")) << failed.out;
  EXPECT_TRUE(contains(failed.out, (folder / "c.tif").string())) << failed.out;
  EXPECT_TRUE(contains(failed.err, "raster " + (folder / "c.tif").string() + " could not be read")) << failed.err;
  for (const auto* name : {"a", "b", "d"}) {
    EXPECT_EQ(read_scores(out / (std::string(name) + "_tiles.csv")).size(), 1U) << name << " was not finished";
  }
  EXPECT_FALSE(fs::exists(out / "c_tiles.csv")) << "a failed raster has no result file that looks complete";
  EXPECT_TRUE(fs::exists(out / ".mgpr-journal")) << "the journal is kept for the rerun";

  // The raster is replaced by a good copy under the same name: only what is missing runs.
  const auto copied = run_command({"gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co",
                                   "BLOCKSIZE=128", whole.string(), (folder / "c.tif").string()});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  const auto rerun = mgpr(arguments);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.out << rerun.err;
  EXPECT_TRUE(contains(rerun.out, "# resuming:")) << rerun.out;
  EXPECT_TRUE(contains(rerun.out, "of 19 tiles were finished by an earlier run")) << rerun.out;
  const auto c_rows = read_scores(out / "c_tiles.csv");
  ASSERT_EQ(c_rows.size(), 16U);
  for (const auto& [id, row] : c_rows) {
    EXPECT_NEAR(row.logit, expected_mean(whole, row.x, row.y, row.width, row.height, 64), 1e-5);
  }
}

// A raster that fails part way holds back none of the rasters after it: rank 0's writer
// hears of the failure from the rank that read it and passes over the raster at once, so
// no rank waits for rows that will never be complete (the ranks would otherwise be held
// until the writer's silence released them, said on stderr, with more than the pacing's
// 256-tile window after the failed raster).
TEST_F(MgprCli, ARasterCorruptMidRunHoldsBackNoRank) {
  const auto folder = path("corrupt-first");
  fs::create_directories(folder);
  write_corrupt_copy(write_image("a-whole.tif", 256, 256), folder / "a.tif");
  fs::rename(write_image("b-good.tif", 640, 640), folder / "b.tif");
  ASSERT_FALSE(HasFailure());
  const auto out = path("corrupt-first-out");
  const auto result = mgpr({folder.string(), "model=" + path("mean.pt").string(), "tile_size=16", "accelerator=cpu",
                            "gpus=2", "threads=1", "workers=1", "outputs=per_raster", "output_dir=" + out.string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_TRUE(contains(result.out, "1 of 2 rasters could not be read")) << result.out;
  EXPECT_FALSE(contains(result.err, "has written no results")) << result.err;
  EXPECT_EQ(read_scores(out / "b_tiles.csv").size(), 1600U);
  EXPECT_FALSE(fs::exists(out / "a_tiles.csv"));
}

}  // namespace
