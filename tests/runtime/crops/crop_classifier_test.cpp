// The crop classifier of task=detect (classify_model=) on batches made here: crops cut
// from float32 tiles and from raw 8- and 16-bit ones, a detector's normalisation undone
// into the classifier's, crop_margin clipped at the tile's edge, a raw tile's missing
// pixels, and a box with no pixel in its tile left unclassified (how crops are resized,
// and where those past their tile come from: crop_windows_test.cpp). The classifier
// tells white squares (last band at the top of its range) from tinted ones (a little
// below). Then the detect task's path on the pipeline, on the CPU and on a GPU: a grid
// detector's boxes on raw 8-bit fake tiles, each batch's crops cut from its host input
// while the consumer holds it.
#include "crops/crop_classifier.hpp"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "distributed/sharding.hpp"
#include "mgpr/error.hpp"
#include "pipeline/pipeline.hpp"
#include "source/fake_source.hpp"
#include "support/temp_dir.hpp"
#include "tasks/detection_parse.hpp"
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
  const auto classes = crops.classify({fractions().to(torch::kFloat)}, boxes_with({rt::Box{{}, 40, 2, 50, 9}}));
  expect_colours(classes);
  ASSERT_EQ(classes[1].size(), 2U);
  EXPECT_EQ(classes[1][1].label, -1);
}

// The detector saw (fraction - 0.5) / 0.25; the classifier wants the fraction itself.
TEST_F(CropClassifierTest, TheDetectorsNormalisationBecomesTheClassifiers) {
  auto crops = classifier({0.5}, {0.25});
  expect_colours(crops.classify({((fractions() - 0.5) / 0.25).to(torch::kFloat)}, boxes_with()));
}

TEST_F(CropClassifierTest, RawEightAndSixteenBitTilesAreScaledFirst) {
  auto bytes =
      classifier({}, {}, 0, rt::RawScaling{{1 / 255.F, 1 / 255.F, 1 / 255.F}, {0, 0, 0}, rt::RawSample::kUInt8});
  expect_colours(bytes.classify({torch::round(fractions() * 255).to(torch::kByte)}, boxes_with()));
  // UInt16 travels as int16's bits: 65535 and 64224 read back as negative numbers.
  const float unit = 1 / 65535.F;
  auto words = classifier({}, {}, 0, rt::RawScaling{{unit, unit, unit}, {0, 0, 0}, rt::RawSample::kUInt16});
  const auto raw = torch::round(fractions() * 65535).to(torch::kInt);
  expect_colours(words.classify({torch::where(raw > 32767, raw - 65536, raw).to(torch::kShort)}, boxes_with()));
}

// The margin brings in the dark background (the white square's mean falls below the
// threshold), clipped at the tile's edge where the square is cut.
TEST_F(CropClassifierTest, TheMarginTakesInTheSurroundingsUpToTheTilesEdge) {
  auto crops = classifier({}, {}, 2);
  const auto classes = crops.classify({fractions().to(torch::kFloat)}, boxes_with());
  EXPECT_EQ(classes[0][0].label, 0) << "white, with its surroundings";
  EXPECT_EQ(classes[1][0].label, 0);
}

// The detector saw (fraction - 0.5) / 0.25 from raw bytes, so a pixel the source marks
// missing (the detector's 0) is the fraction 0.5 to the classifier: the white square,
// marked missing in its tile's valid mask, reads as the background.
TEST_F(CropClassifierTest, AMissingPixelOfARawTileIsTheDetectorsZero) {
  const float gain = 1 / 255.F / 0.25F;
  auto crops = classifier({0.5}, {0.25}, 0, rt::RawScaling{{gain, gain, gain}, {-2, -2, -2}, rt::RawSample::kUInt8});
  const auto bytes = torch::round(fractions() * 255).to(torch::kByte);
  auto valid = torch::ones({2, kSide, kSide}, torch::kByte);
  valid[0].slice(0, 4, 12).slice(1, 4, 12).fill_(0);  // the white square of the first tile
  const auto classes = crops.classify({bytes, valid}, boxes_with());
  EXPECT_EQ(classes[0][0].label, 0) << "the white square, missing";
  EXPECT_EQ(classes[0][1].label, 0);
  EXPECT_EQ(classes[1][0].label, 0);
  // Without the masks it is white: the mask, not the scaling, made it so.
  EXPECT_EQ(crops.classify({bytes}, boxes_with())[0][0].label, 1);
}

// The crops cross from the batch's host input to the GPU, are resized and classified
// there; the classes come back the same.
TEST_F(CropClassifierTest, OnAGpuTheClassesAreTheSame) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
  }
  const rt::DeviceChoice gpu{torch::Device(torch::kCUDA, 0), true, "a GPU"};
  auto floats = classifier({}, {}, 0, std::nullopt, kInput, gpu);
  expect_colours(floats.classify({fractions().to(torch::kFloat)}, boxes_with()));
  auto bytes = classifier(
      {}, {}, 0, rt::RawScaling{{1 / 255.F, 1 / 255.F, 1 / 255.F}, {0, 0, 0}, rt::RawSample::kUInt8}, kInput, gpu);
  expect_colours(bytes.classify({torch::round(fractions() * 255).to(torch::kByte).pin_memory()}, boxes_with()));
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

// Each tile's boxes and their classes, from the pipeline's post-processing thread.
struct TileClasses {
  std::vector<rt::Box> boxes;
  std::vector<rt::CropClass> classes;
};

class ClassifyEveryBox final : public rt::BatchConsumer {
 public:
  explicit ClassifyEveryBox(rt::CropClassifier& crops) : crops_(crops) {}
  void consume(std::span<const rt::TileData> /*tiles*/, const torch::IValue& /*output*/) override {
    ADD_FAILURE() << "the pipeline gave the consumer no host input to cut crops from";
  }
  void consume_with_inputs(std::span<const rt::TileData> tiles, const torch::IValue& output,
                           const rt::BatchInput& input) override {
    auto boxes = rt::parse_detections(output, static_cast<std::int64_t>(tiles.size()), 0.0, "the grid detector");
    auto classes = crops_.classify(input, boxes, tiles);
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      by_tile[tiles[i].tile.id.row] = {std::move(boxes[i]), std::move(classes[i])};
    }
  }
  std::map<int, TileClasses> by_tile;

 private:
  rt::CropClassifier& crops_;
};

constexpr int kFakeTile = 64;
constexpr int kFakeTiles = 12;
constexpr int kGrid = 4;               // boxes per side of a tile
constexpr double kMeanLine = 0.5;      // the classifier's line on the last band's mean
constexpr double kClearOfLine = 0.05;  // known answers only for crops this far from it

// A grid detector and a classifier on the last band's mean, through the pipeline with
// two readers and batches of 4, on `device`.
std::map<int, TileClasses> classify_fake_tiles(const rt::DeviceChoice& device) {
  const auto folder = mgpr::test::program_temp_dir().path();
  const auto detector_file = folder / "grid-detector.pt";
  const auto classifier_file = folder / "last-band-half.pt";
  mgpr::test::grid_boxes_detector(kGrid).save(detector_file.string());
  mgpr::test::last_band_classifier(kMeanLine, kInput).save(classifier_file.string());
  const auto source = rt::make_fake_source({kFakeTiles, 0.0, rt::RawSample::kUInt8}, kFakeTile);
  const auto plans = rt::plan_execution({mgpr::Precision::kFp32, false, true}, rt::execution_facts(device));
  rt::TileModel detector({detector_file.string(), {}, kFakeTile}, device, source->channels(), plans);
  rt::CropClassifierOptions options;
  options.model = {classifier_file.string(), {}, kInput, "the model card in last-band-half.pt", {}};
  options.class_names = {"dark", "bright"};
  rt::CropClassifier crops(options, device, source->channels(), plans, source->raw_scaling());
  ClassifyEveryBox consumer(crops);
  (void)rt::run_pipeline({*source, 2, rt::make_static_feed(source->tiles(), 0, 1), 12}, detector, device, consumer,
                         {4, {}, source->raw_scaling()});
  return consumer.by_tile;
}

// The mean of the last band over a box's pixels (its corners rounded outwards), as
// fractions of the range: the fake tile's own values, not the batch's.
double last_band_mean(int tile, const rt::Box& box) {
  double sum = 0;
  int count = 0;
  for (int y = static_cast<int>(std::floor(box.y1)); y < static_cast<int>(std::ceil(box.y2)); ++y) {
    for (int x = static_cast<int>(std::floor(box.x1)); x < static_cast<int>(std::ceil(box.x2)); ++x) {
      sum += rt::fake_pixel(tile, 2, y, x);
      ++count;
    }
  }
  return sum / count;
}

TEST(CropClassifierPipeline, EveryBatchsBoxesAreClassifiedFromItsOwnTiles) {
  const auto by_tile = classify_fake_tiles({});
  ASSERT_EQ(by_tile.size(), static_cast<std::size_t>(kFakeTiles));
  int known = 0;
  int bright = 0;
  for (const auto& [tile, found] : by_tile) {
    ASSERT_EQ(found.boxes.size(), static_cast<std::size_t>(kGrid * kGrid)) << "tile " << tile;
    ASSERT_EQ(found.classes.size(), found.boxes.size());
    for (std::size_t i = 0; i < found.boxes.size(); ++i) {
      const double mean = last_band_mean(tile, found.boxes[i]);
      bright += found.classes[i].label == 1 ? 1 : 0;
      if (std::abs(mean - kMeanLine) < kClearOfLine) continue;
      ++known;
      EXPECT_EQ(found.classes[i].label, mean > kMeanLine ? 1 : 0)
          << "tile " << tile << " box " << i << " mean " << mean;
    }
  }
  // Enough of both classes that a crop from the wrong tile or place would show.
  EXPECT_GT(known, kFakeTiles * kGrid * kGrid / 2);
  constexpr int kBoxes = kFakeTiles * kGrid * kGrid;
  EXPECT_GT(bright, kBoxes / 10);
  EXPECT_GT(kBoxes - bright, kBoxes / 10);
}

// The same on a GPU: the detector and the classifier on the card, the crops cut from the
// pinned slot the batch went to the card from; the classes are the CPU's.
TEST(CropClassifierPipeline, OnAGpuEveryBoxHasTheCpusClass) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
  }
  const auto on_cpu = classify_fake_tiles({});
  const auto on_gpu = classify_fake_tiles({torch::Device(torch::kCUDA, 0), true, "a GPU"});
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (const auto& [tile, found] : on_cpu) {
    const auto& gpu = on_gpu.at(tile);
    ASSERT_EQ(gpu.boxes, found.boxes) << "tile " << tile;
    ASSERT_EQ(gpu.classes.size(), found.classes.size());
    for (std::size_t i = 0; i < found.classes.size(); ++i) {
      EXPECT_EQ(gpu.classes[i].label, found.classes[i].label) << "tile " << tile << " box " << i;
      EXPECT_NEAR(gpu.classes[i].score, found.classes[i].score, 1e-3) << "tile " << tile << " box " << i;
    }
  }
}

}  // namespace
