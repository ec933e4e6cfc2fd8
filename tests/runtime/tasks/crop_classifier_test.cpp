// The crop classifier of task=detect (classify_model=) on batches made here: crops cut
// from float32 tiles and from raw 8- and 16-bit ones, a detector's normalisation undone
// into the classifier's, crop_margin clipped at the tile's edge, and a box with no pixel
// in its tile left unclassified. The classifier tells white squares (last band at the
// top of its range) from tinted ones (a little below).
#include "tasks/crop_classifier.hpp"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "mgpr/error.hpp"
#include "support/temp_dir.hpp"
#include "tools/known_models.hpp"

namespace {

namespace rt = mgpr::runtime;

constexpr int kSide = 32;
constexpr int kInput = 16;  // the classifier's input side

struct Painted {
  rt::Box box;
  double last_band;  // as a fraction of the range: 1 white, 0.98 tinted
};

// Two tiles of 3 bands on a dark background (0.5): a white and a tinted square in the
// first, a tinted square cut by the second's right edge.
const std::vector<std::vector<Painted>>& squares() {
  static const std::vector<std::vector<Painted>> tiles{
      {{{{}, 4, 4, 12, 12}, 1.0}, {{{}, 18, 20, 26, 28}, 0.98}},
      {{{{}, 26, 8, 32, 16}, 0.98}},
  };
  return tiles;
}

// The batch as fractions of the range, [2, 3, kSide, kSide].
torch::Tensor fractions() {
  auto batch = torch::full({2, 3, kSide, kSide}, 0.5, torch::kDouble);
  for (std::size_t tile = 0; tile < squares().size(); ++tile) {
    for (const auto& [box, last] : squares()[tile]) {
      auto area = batch[static_cast<std::int64_t>(tile)]
                      .slice(1, static_cast<std::int64_t>(box.y1), static_cast<std::int64_t>(box.y2))
                      .slice(2, static_cast<std::int64_t>(box.x1), static_cast<std::int64_t>(box.x2));
      area.fill_(1.0);
      area[2].fill_(last);
    }
  }
  return batch;
}

std::vector<std::vector<rt::Box>> boxes_with(std::vector<rt::Box> extra_in_second_tile = {}) {
  std::vector<std::vector<rt::Box>> boxes;
  for (const auto& tile : squares()) {
    auto& listed = boxes.emplace_back();
    for (const auto& painted : tile) listed.push_back(painted.box);
  }
  boxes[1].insert(boxes[1].end(), extra_in_second_tile.begin(), extra_in_second_tile.end());
  return boxes;
}

class CropClassifierTest : public testing::Test {
 protected:
  static rt::CropClassifier classifier(std::vector<double> detector_mean = {}, std::vector<double> detector_std = {},
                                       int margin = 0, std::optional<rt::RawScaling> raw = std::nullopt,
                                       int input_size = kInput, const rt::DeviceChoice& device = {}) {
    const auto file = mgpr::test::program_temp_dir().path() / "last-band.pt";
    mgpr::test::last_band_classifier(0.99, kInput).save(file.string());
    const auto plans = rt::plan_execution({mgpr::Precision::kFp32, false, true}, rt::execution_facts(device));
    rt::CropClassifierOptions options;
    options.model = {file.string(), {}, input_size, "the model card in last-band.pt", {}};
    options.margin = margin;
    options.class_names = {"tinted", "white"};
    options.detector_mean = std::move(detector_mean);
    options.detector_std = std::move(detector_std);
    return rt::CropClassifier(options, device, 3, plans, std::move(raw));
  }

  static void expect_colours(const std::vector<std::vector<rt::CropClass>>& classes) {
    ASSERT_EQ(classes.size(), 2U);
    ASSERT_EQ(classes[0].size(), 2U);
    ASSERT_GE(classes[1].size(), 1U);
    EXPECT_EQ(classes[0][0].label, 1) << "white";
    EXPECT_EQ(classes[0][1].label, 0) << "tinted";
    EXPECT_EQ(classes[1][0].label, 0) << "tinted, cut by the tile's edge";
    for (const auto& answer : {classes[0][0], classes[0][1], classes[1][0]}) EXPECT_NEAR(answer.score, 1.0, 1e-6);
  }
};

TEST_F(CropClassifierTest, FloatTilesAreCroppedResizedAndClassified) {
  auto crops = classifier();
  // A box wholly outside its tile has no crop: no class.
  const auto classes = crops.classify(fractions().to(torch::kFloat), boxes_with({rt::Box{{}, 40, 2, 50, 9}}));
  expect_colours(classes);
  ASSERT_EQ(classes[1].size(), 2U);
  EXPECT_EQ(classes[1][1].label, -1);
}

// The detector saw (fraction - 0.5) / 0.25; the classifier wants the fraction itself.
TEST_F(CropClassifierTest, TheDetectorsNormalisationBecomesTheClassifiers) {
  auto crops = classifier({0.5}, {0.25});
  expect_colours(crops.classify(((fractions() - 0.5) / 0.25).to(torch::kFloat), boxes_with()));
}

TEST_F(CropClassifierTest, RawEightAndSixteenBitTilesAreScaledFirst) {
  auto bytes =
      classifier({}, {}, 0, rt::RawScaling{{1 / 255.F, 1 / 255.F, 1 / 255.F}, {0, 0, 0}, rt::RawSample::kUInt8});
  expect_colours(bytes.classify(torch::round(fractions() * 255).to(torch::kByte), boxes_with()));
  // UInt16 travels as int16's bits: 65535 and 64224 read back as negative numbers.
  const float unit = 1 / 65535.F;
  auto words = classifier({}, {}, 0, rt::RawScaling{{unit, unit, unit}, {0, 0, 0}, rt::RawSample::kUInt16});
  const auto raw = torch::round(fractions() * 65535).to(torch::kInt);
  expect_colours(words.classify(torch::where(raw > 32767, raw - 65536, raw).to(torch::kShort), boxes_with()));
}

// The margin brings in the dark background (the white square's mean falls below the
// threshold), clipped at the tile's edge where the square is cut.
TEST_F(CropClassifierTest, TheMarginTakesInTheSurroundingsUpToTheTilesEdge) {
  auto crops = classifier({}, {}, 2);
  const auto classes = crops.classify(fractions().to(torch::kFloat), boxes_with());
  EXPECT_EQ(classes[0][0].label, 0) << "white, with its surroundings";
  EXPECT_EQ(classes[1][0].label, 0);
}

// The crops cross from the batch's host input to the GPU, are resized and classified
// there; the classes come back the same.
TEST_F(CropClassifierTest, OnAGpuTheClassesAreTheSame) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
  }
  const rt::DeviceChoice gpu{torch::Device(torch::kCUDA, 0), true, "a GPU"};
  auto floats = classifier({}, {}, 0, std::nullopt, kInput, gpu);
  expect_colours(floats.classify(fractions().to(torch::kFloat), boxes_with()));
  auto bytes = classifier(
      {}, {}, 0, rt::RawScaling{{1 / 255.F, 1 / 255.F, 1 / 255.F}, {0, 0, 0}, rt::RawSample::kUInt8}, kInput, gpu);
  expect_colours(bytes.classify(torch::round(fractions() * 255).to(torch::kByte).pin_memory(), boxes_with()));
}

TEST_F(CropClassifierTest, AClassifierThatRefusesItsCropsSizeIsNamed) {
  try {
    (void)classifier({}, {}, 0, std::nullopt, 20);
    ADD_FAILURE() << "no error";
  } catch (const mgpr::UsageError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("the crop classifier, on crops of 20 px (the model card in last-band.pt's tile_size)"),
              std::string::npos)
        << text;
  }
}

}  // namespace
