// A resumed run never mixes results made under other settings. Key by key, two values
// whose journaled results differ never share a journal folder (the differential test);
// a run whose min_area or precision differs from the stopped run's starts afresh and
// names the key; a journal under the key mgpr used before folders recorded their
// settings is still resumed where that key is unchanged.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <set>

#include "mgpr/config.hpp"
#include "mgpr/process.hpp"
#include "resume/tile_journal.hpp"
#include "resume_support.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::test::Process;
using mgpr::test::TempDir;
using mgpr::test::resume::journaled_tiles;
using mgpr::test::resume::layer_content;
using mgpr::test::resume::ranks_of;
using mgpr::test::resume::tiles_processed;
using mgpr::test::resume::wait_for;

std::vector<std::string> with_output(std::vector<std::string> arguments, const fs::path& output) {
  arguments.insert(arguments.begin(), MGPR_BINARY);
  arguments.push_back("output_dir=" + output.string());
  return arguments;
}

// mgpr stopped by SIGTERM to every rank once `stop_after` tiles are journaled.
void stop_part_way(const TempDir& dir, const std::vector<std::string>& arguments, const fs::path& output,
                   int stop_after) {
  Process first(with_output(arguments, output), {}, dir.path(), "first");
  ASSERT_TRUE(wait_for([&] { return journaled_tiles(output) >= stop_after; }, std::chrono::seconds(120)));
  for (const pid_t rank : ranks_of(first.pid())) ::kill(rank, SIGTERM);
  const auto stopped = first.wait(std::chrono::seconds(60));
  ASSERT_EQ(stopped.code, 3) << stopped.out << stopped.err;
}

mgpr::test::Finished run_to_end(const TempDir& dir, const std::vector<std::string>& arguments, const fs::path& output) {
  return mgpr::test::run(with_output(arguments, output), {}, dir.path(), std::chrono::seconds(300));
}

void make_image(const fs::path& image, int width, int height, const std::vector<std::string>& squares) {
  std::vector<std::string> command{MGPR_TEST_IMAGE, image.string(),         "--width", std::to_string(width),
                                   "--height",      std::to_string(height), "--bands", "3"};
  for (const auto& square : squares) command.insert(command.end(), {"--square", square});
  ASSERT_EQ(mgpr::run_command(command).exit_code, 0);
}

void make_model(const std::vector<std::string>& arguments) {
  std::vector<std::string> command{MGPR_TEST_MODEL};
  command.insert(command.end(), arguments.begin(), arguments.end());
  ASSERT_EQ(mgpr::run_command(command).exit_code, 0);
}

const std::vector<std::string> kFieldSquares{"30,30,50", "130,90,60", "300,150,70", "200,200,40", "20,220,30"};

// What this guards against: a polygons run stopped under min_area=20 (m², 0.1 m pixels) and
// run again with min_area=0 lost the small shapes of the tiles done before the stop.
TEST(ResumeSettings, AnotherMinAreaStartsAfreshAndSaysSo) {
  TempDir dir;
  const auto image = dir.path() / "fields.tif";
  make_image(image, 400, 272, kFieldSquares);
  const auto model = dir.path() / "slow-segmenter.pt";
  make_model({"segmenter", model.string(), "--slow", "600"});
  ASSERT_FALSE(HasFailure());
  const auto with_min_area = [&](const std::string& area) {
    return std::vector<std::string>{
        image.string(), "task=segment", "model=" + model.string(), "polygons=true", "tile_size=64", "overlap=16",
        "batch_size=2", "gpus=2",       "accelerator=cpu",         "threads=1",     "workers=1",    "min_area=" + area};
  };
  const auto reference = dir.path() / "uninterrupted";
  const auto complete = run_to_end(dir, with_min_area("0"), reference);
  ASSERT_EQ(complete.code, 0) << complete.out << complete.err;

  const auto output = dir.path() / "resumed";
  stop_part_way(dir, with_min_area("20"), output, 10);
  ASSERT_FALSE(HasFailure());
  const int journaled = journaled_tiles(output);
  ASSERT_LT(journaled, 8 * 6) << "the run was not stopped early enough to test resuming";
  const auto last = run_to_end(dir, with_min_area("0"), output);
  ASSERT_EQ(last.code, 0) << last.out << last.err;
  EXPECT_NE(last.out.find("# not resuming the earlier run in this folder (" + std::to_string(journaled) +
                          " tiles journaled): min_area 20 → 0; starting afresh"),
            std::string::npos)
      << last.out;
  EXPECT_EQ(tiles_processed(last.out), 8 * 6) << last.out;
  EXPECT_EQ(layer_content(output / "fields_polygons.gpkg"), layer_content(reference / "fields_polygons.gpkg"));
  EXPECT_NE(last.out.find("# removed the journal of an earlier run with other settings"), std::string::npos)
      << last.out;
  EXPECT_FALSE(fs::exists(output / ".mgpr-journal"));
}

// A job requeued from a CPU with native bf16 onto one without: the precision the run
// computes in differs, whatever precision= says. Here both are typed.
TEST(ResumeSettings, AnotherPrecisionStartsAfreshAndSaysSo) {
  TempDir dir;
  const auto image = dir.path() / "field.tif";
  make_image(image, 400, 272, kFieldSquares);
  const auto model = dir.path() / "slow-mean.pt";
  make_model({"tile-mean", model.string(), "--slow", "300"});
  ASSERT_FALSE(HasFailure());
  const auto in = [&](const std::string& precision) {
    return std::vector<std::string>{image.string(),
                                    "task=classify",
                                    "model=" + model.string(),
                                    "tile_size=64",
                                    "batch_size=2",
                                    "gpus=2",
                                    "accelerator=cpu",
                                    "threads=1",
                                    "workers=1",
                                    "force_precision=true",
                                    "precision=" + precision};
  };
  const auto reference = dir.path() / "uninterrupted";
  const auto complete = run_to_end(dir, in("fp32"), reference);
  ASSERT_EQ(complete.code, 0) << complete.out << complete.err;
  const auto output = dir.path() / "resumed";
  stop_part_way(dir, in("bf16"), output, 4);
  ASSERT_FALSE(HasFailure());
  const auto last = run_to_end(dir, in("fp32"), output);
  ASSERT_EQ(last.code, 0) << last.out << last.err;
  EXPECT_NE(last.out.find("# not resuming the earlier run in this folder"), std::string::npos) << last.out;
  EXPECT_NE(last.out.find("precision bf16"), std::string::npos) << last.out;
  EXPECT_NE(last.out.find(" → fp32; starting afresh"), std::string::npos) << last.out;
  EXPECT_EQ(mgpr::test::read_text(output / "field_tiles.csv"), mgpr::test::read_text(reference / "field_tiles.csv"));
}

}  // namespace
