// A model nobody here wrote, through a real job: torchvision's RetinaNet (DeepForest's
// architecture), exported by tests/torchvision/test_models.py, run by mgpr-submit on 2
// ranks and on 1; the two must keep the same boxes. Skipped, saying why, where the
// test Python cannot export for mgpr's LibTorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "mgpr/process.hpp"
#include "mgpr/text.hpp"
#include "slurm/test_support.hpp"
#include "support/known_squares.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::scratch;
using Rows = std::vector<std::map<std::string, std::string>>;

constexpr int kSkipped = 77;

Rows sorted_boxes(const std::filesystem::path& csv) {
  auto rows = mgpr::test::read_csv_rows(csv);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::pair(std::stod(a.at("y1")), std::stod(a.at("x1"))) <
           std::pair(std::stod(b.at("y1")), std::stod(b.at("x1")));
  });
  return rows;
}

TEST(TorchvisionJob, RetinaNetOnTwoRanksUnderMgprSubmitKeepsTheBoxesOfOneRank) {
  if (std::string(MGPR_TEST_IMAGE).empty()) GTEST_SKIP() << "needs mgpr-test-image (a build with GDAL)";
  const auto dir = scratch("torchvision-job");
  const auto exported =
      run_command({MGPR_TEST_PYTHON, MGPR_TORCHVISION_MODELS, "retinanet", dir.string(), "--tile", "192", "--libtorch",
                   MGPR_LIBTORCH_VERSION, std::string("--operators=") + MGPR_TORCHVISION_OPS});
  if (exported.exit_code == kSkipped) GTEST_SKIP() << exported.out;
  ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  // The script's last line names the operators library; the rest went to stderr.
  const auto lines = mgpr::split_list(exported.out, '\n');
  ASSERT_FALSE(lines.empty());
  const std::string operators = lines.back();
  const auto image = dir / "wide.tif";
  ASSERT_EQ(run_command({MGPR_TEST_IMAGE, image.string(), "--width", "448", "--height", "320", "--square", "170,150,60",
                         "--square", "300,40,40"})
                .exit_code,
            0);

  const auto submit = [&](int ranks) {
    const auto output = dir / ("out-" + std::to_string(ranks));
    const auto result = run_command({MGPR_SUBMIT, "--gpus", "a100:" + std::to_string(ranks), "--wait", "--log-dir",
                                     (dir / "logs").string(), image.string(), "task=detect",
                                     "model=" + (dir / "retinanet.pt").string(), "model_libraries=" + operators,
                                     "tile_size=192", "overlap=64", "batch_size=2", "output_dir=" + output.string()});
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    return sorted_boxes(output / "wide_detections.csv");
  };
  const auto one = submit(1);
  const auto two = submit(2);
  ASSERT_GT(one.size(), 10U) << "the random RetinaNet found too little to compare";
  ASSERT_EQ(two.size(), one.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(two[i].at("label"), one[i].at("label")) << "box " << i;
    EXPECT_NEAR(std::stod(two[i].at("score")), std::stod(one[i].at("score")), 1e-4) << "box " << i;
    for (const std::string corner : {"x1", "y1", "x2", "y2", "map_x1", "map_y2"}) {
      EXPECT_NEAR(std::stod(two[i].at(corner)), std::stod(one[i].at(corner)), 0.01) << "box " << i << " " << corner;
    }
  }
}

}  // namespace
