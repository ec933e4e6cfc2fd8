// The outputs' known-answer check as a user runs it: mgpr-submit on the real local
// cluster, 2 ranks under srun --mgpr, a threshold detector over an image with bright
// squares straddling tile overlaps and edges. Every square must be found once, at its
// map coordinates.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"
#include "support/known_squares.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::run_command;
using mgpr::test::scratch;

const auto& read_csv = mgpr::test::read_csv_rows;

TEST(KnownAnswerJob, TwoRanksUnderMgprSubmitFindEverySquareOnce) {
  if (std::string(MGPR_TEST_IMAGE).empty() || std::string(MGPR_TEST_MODEL).empty()) {
    GTEST_SKIP() << "needs mgpr-test-image and mgpr-test-model (a build with GDAL and LibTorch)";
  }
  const auto dir = scratch("known-answer-job");
  const auto image = dir / "squares.tif";
  const auto objects = dir / "objects.csv";
  std::vector<std::string> make_image{MGPR_TEST_IMAGE, image.string(), "--width",       "200",
                                      "--height",      "150",          "--objects-csv", objects.string()};
  for (const auto& square : mgpr::test::kKnownSquares) make_image.insert(make_image.end(), {"--square", square});
  ASSERT_EQ(run_command(make_image).exit_code, 0);
  const auto model = dir / "detector.pt";
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "detector", model.string()}).exit_code, 0);

  const auto output = dir / "out";
  const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:2", "--wait", "--log-dir", (dir / "logs").string(),
                                   image.string(), "task=detect", "model=" + model.string(), "tile_size=64",
                                   "overlap=16", "batch_size=2", "sharding=dynamic", "output_dir=" + output.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;

  const auto found = read_csv(output / "squares_detections.csv");
  const auto known = read_csv(objects);
  ASSERT_EQ(known.size(), 7U);
  EXPECT_EQ(found.size(), known.size());
  for (const auto& object : known) {
    int matches = 0;
    for (const auto& box : found) {
      bool same = true;
      for (const std::string c : {"map_x1", "map_y1", "map_x2", "map_y2"}) {
        same = same && std::abs(std::stod(box.at(c)) - std::stod(object.at(c))) <= 0.15;  // 1.5 px of 0.1 m
      }
      matches += same ? 1 : 0;
    }
    EXPECT_EQ(matches, 1) << "object " << object.at("id");
  }
  EXPECT_TRUE(fs::exists(output / "squares_detections.gpkg"));
}

}  // namespace
