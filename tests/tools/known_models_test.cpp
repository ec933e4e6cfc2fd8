// The known-answer models: bright squares painted at known places must come back as
// exactly those boxes and masks, in every output style, after a save/load round trip
// and after the optimisation the runtime applies to every CPU model.
#include "tools/known_models.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mgpr/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::test::DetectorStyle;

constexpr double kThreshold = 0.99;
constexpr int kSide = 32;

struct Box {
  float x1, y1, x2, y2, score;
  bool operator==(const Box&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Box& b) {
  return out << '(' << b.x1 << ',' << b.y1 << ',' << b.x2 << ',' << b.y2 << " score " << b.score << ')';
}

// Background below 246/255, as mgpr-test-image's, and seeded so failures repeat.
torch::Tensor background(int batch, int channels = 3) {
  torch::manual_seed(7);
  return torch::rand({batch, channels, kSide, kSide}) * (246.0 / 255.0);
}

// Sets every band to 1 over the square, clipped to the image like mgpr-test-image's.
void paint(torch::Tensor& x, int image, int column, int row, int side) {
  using torch::indexing::Slice;
  const auto clip = [](int v) { return std::clamp(v, 0, kSide); };
  x.index_put_({image, Slice(), Slice(clip(row), clip(row + side)), Slice(clip(column), clip(column + side))}, 1.0);
}

// Image 0: squares touching the top-left corner, inside, and past the bottom-right corner.
// Image 1: two squares 1 px apart (two components) and two touching only at a corner (one).
torch::Tensor two_images() {
  auto x = background(2);
  paint(x, 0, 0, 0, 4);
  paint(x, 0, 6, 8, 5);
  paint(x, 0, 28, 26, 9);
  paint(x, 1, 20, 2, 3);
  paint(x, 1, 24, 2, 3);
  paint(x, 1, 5, 5, 4);
  paint(x, 1, 9, 9, 3);
  return x;
}

// In label order: the component whose last pixel (row-major) comes first is first.
const std::vector<Box> kImage0 = {{0, 0, 4, 4, 1}, {6, 8, 11, 13, 1}, {28, 26, 32, 32, 1}};
const std::vector<Box> kImage1 = {{20, 2, 23, 5, 1}, {24, 2, 27, 5, 1}, {5, 5, 12, 12, (16.0F + 9.0F) / 49.0F}};

std::vector<Box> rows_to_boxes(const torch::Tensor& rows) {
  std::vector<Box> boxes;
  const auto r = rows.to(torch::kFloat).contiguous();
  for (std::int64_t i = 0; i < r.size(0); ++i) {
    const auto* v = r[i].data_ptr<float>();
    boxes.push_back({v[0], v[1], v[2], v[3], v[4]});
  }
  return boxes;
}

std::vector<Box> dict_boxes(const c10::IValue& detections) {
  const auto dict = detections.toGenericDict();
  const auto boxes = dict.at("boxes").toTensor();
  const auto scores = dict.at("scores").toTensor();
  const auto labels = dict.at("labels").toTensor();
  EXPECT_EQ(boxes.scalar_type(), torch::kFloat);
  EXPECT_EQ(scores.scalar_type(), torch::kFloat);
  EXPECT_EQ(labels.scalar_type(), torch::kLong);
  EXPECT_EQ(boxes.dim(), 2);
  EXPECT_EQ(boxes.size(1), 4);
  EXPECT_EQ(scores.size(0), boxes.size(0));
  EXPECT_TRUE(labels.eq(1).all().item<bool>()) << labels;
  return rows_to_boxes(torch::cat({boxes, scores.unsqueeze(1)}, 1));
}

c10::IValue run(torch::jit::Module& model, const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  return model.forward({x});
}

// Every tensor in an output (dicts in key order), to compare outputs of any style.
void flatten(const c10::IValue& value, std::vector<torch::Tensor>& out) {
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isList()) {
    for (const auto& item : value.toListRef()) flatten(item, out);
  } else if (value.isTuple()) {
    for (const auto& item : value.toTupleRef().elements()) flatten(item, out);
  } else if (value.isGenericDict()) {
    std::map<std::string, c10::IValue> sorted;
    for (const auto& entry : value.toGenericDict()) sorted.emplace(entry.key().toStringRef(), entry.value());
    out.push_back(torch::tensor(static_cast<std::int64_t>(sorted.size())));
    for (const auto& [key, item] : sorted) flatten(item, out);
  } else {
    ADD_FAILURE() << "unexpected output type " << value.tagKind();
  }
}

void expect_same_output(const c10::IValue& a, const c10::IValue& b, const std::string& what) {
  std::vector<torch::Tensor> left;
  std::vector<torch::Tensor> right;
  flatten(a, left);
  flatten(b, right);
  ASSERT_EQ(left.size(), right.size()) << what;
  for (std::size_t i = 0; i < left.size(); ++i) {
    EXPECT_TRUE(left[i].sizes() == right[i].sizes() && left[i].scalar_type() == right[i].scalar_type() &&
                torch::equal(left[i], right[i]))
        << what << ", tensor " << i << ":\n"
        << left[i] << "\nvs\n"
        << right[i];
  }
}

struct Named {
  std::string name;
  torch::jit::Module model;
};

std::vector<Named> all_models() {
  return {{"detector", mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kTensor)},
          {"detector-dicts", mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kDicts)},
          {"detector-tuple", mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kTupleLossesDicts)},
          {"segmenter", mgpr::test::threshold_segmenter(kThreshold)},
          {"slow detector-dicts",
           mgpr::test::slow(mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kDicts), 3)}};
}

TEST(ThresholdDetector, TensorStyleGivesExactBoxesThenPadding) {
  auto model = mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kTensor);
  const auto out = run(model, two_images()).toTensor();
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 8, 6}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  const std::array<const std::vector<Box>*, 2> expected{&kImage0, &kImage1};
  for (int image = 0; image < 2; ++image) {
    const auto n = static_cast<std::int64_t>(expected[image]->size());
    EXPECT_EQ(rows_to_boxes(out[image].slice(0, 0, n)), *expected[image]) << "image " << image;
    EXPECT_TRUE(out[image].slice(0, 0, n).select(1, 5).eq(1).all().item<bool>()) << "labels are 1";
    const auto padding = out[image].slice(0, n);
    EXPECT_TRUE(padding.select(1, 4).eq(-1).all().item<bool>()) << padding;
    EXPECT_TRUE(padding.index({torch::indexing::Slice(), torch::tensor({0, 1, 2, 3, 5})}).eq(0).all().item<bool>())
        << padding;
  }
}

TEST(ThresholdDetector, DictsStyleIsTorchvisionsListOfDicts) {
  auto model = mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kDicts);
  const auto out = run(model, two_images()).toList();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(dict_boxes(out.get(0)), kImage0);
  EXPECT_EQ(dict_boxes(out.get(1)), kImage1);
}

TEST(ThresholdDetector, TupleStyleHasEmptyLossesThenDicts) {
  auto model = mgpr::test::threshold_detector(kThreshold, 8, DetectorStyle::kTupleLossesDicts);
  const auto out = run(model, two_images());
  ASSERT_TRUE(out.isTuple());
  const auto& elements = out.toTupleRef().elements();
  ASSERT_EQ(elements.size(), 2U);
  EXPECT_EQ(elements[0].toGenericDict().size(), 0U);
  const auto detections = elements[1].toList();
  ASSERT_EQ(detections.size(), 2U);
  EXPECT_EQ(dict_boxes(detections.get(0)), kImage0);
  EXPECT_EQ(dict_boxes(detections.get(1)), kImage1);
}

TEST(ThresholdDetector, TheBandMeanDecidesNotAnyOneBand) {
  auto x = background(1);
  x.index_put_({0, 0, torch::indexing::Slice(3, 9), torch::indexing::Slice(3, 9)}, 1.0);  // band 1 only
  paint(x, 0, 12, 12, 2);
  auto model = mgpr::test::threshold_detector(kThreshold, 4, DetectorStyle::kDicts);
  EXPECT_EQ(dict_boxes(run(model, x).toList().get(0)), (std::vector<Box>{{12, 12, 14, 14, 1}}));
}

TEST(ThresholdDetector, ScoreIsTheShareOfTheBoxTheComponentFills) {
  auto x = background(1);
  paint(x, 0, 10, 10, 6);  // an L: a 6x6 square with its 3x3 bottom-right quarter dark again
  x.index_put_({0, torch::indexing::Slice(), torch::indexing::Slice(13, 16), torch::indexing::Slice(13, 16)}, 0.5);
  auto model = mgpr::test::threshold_detector(kThreshold, 4, DetectorStyle::kTensor);
  const auto boxes = rows_to_boxes(run(model, x).toTensor()[0].slice(0, 0, 1));
  EXPECT_EQ(boxes, (std::vector<Box>{{10, 10, 16, 16, 27.0F / 36.0F}}));
}

TEST(ThresholdDetector, MaxBoxesKeepsTheFirstInLabelOrder) {
  auto tensor_model = mgpr::test::threshold_detector(kThreshold, 2, DetectorStyle::kTensor);
  auto dict_model = mgpr::test::threshold_detector(kThreshold, 2, DetectorStyle::kDicts);
  const auto x = two_images();
  const std::vector<Box> first_two(kImage1.begin(), kImage1.begin() + 2);
  const auto out = run(tensor_model, x).toTensor();
  ASSERT_EQ(out.size(1), 2);
  EXPECT_EQ(rows_to_boxes(out[1]), first_two);
  EXPECT_EQ(dict_boxes(run(dict_model, x).toList().get(1)), first_two);
}

TEST(ThresholdDetector, NothingBrightGivesOnlyPaddingAndEmptyDicts) {
  const auto x = background(2);
  auto tensor_model = mgpr::test::threshold_detector(kThreshold, 3, DetectorStyle::kTensor);
  const auto out = run(tensor_model, x).toTensor();
  EXPECT_TRUE(out.select(2, 4).eq(-1).all().item<bool>()) << out;
  auto dict_model = mgpr::test::threshold_detector(kThreshold, 3, DetectorStyle::kDicts);
  const auto list = run(dict_model, x).toList();
  ASSERT_EQ(list.size(), 2U);
  for (std::size_t i = 0; i < list.size(); ++i) {
    EXPECT_TRUE(dict_boxes(list.get(i)).empty());
    EXPECT_EQ(list.get(i).toGenericDict().at("boxes").toTensor().sizes(), (std::vector<std::int64_t>{0, 4}));
  }
}

TEST(ThresholdSegmenter, ArgmaxIsClassOneExactlyWhereTheMeanIsAboveTheThreshold) {
  // Multiples of 1/8 over 4 bands: every mean is exact, and some equal the threshold.
  constexpr double kHalf = 0.5;
  torch::manual_seed(3);
  const auto x = torch::randint(0, 9, {2, 4, kSide, kSide}).to(torch::kFloat) / 8.0;
  auto model = mgpr::test::threshold_segmenter(kHalf);
  const auto logits = run(model, x).toTensor();
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{2, 2, kSide, kSide}));
  const auto classes = logits.argmax(1);
  const auto values = x.accessor<float, 4>();
  int at_threshold = 0;
  for (int b = 0; b < 2; ++b) {
    for (int row = 0; row < kSide; ++row) {
      for (int column = 0; column < kSide; ++column) {
        double sum = 0;
        for (int band = 0; band < 4; ++band) sum += values[b][band][row][column];
        const double mean = sum / 4;
        at_threshold += mean == kHalf ? 1 : 0;
        ASSERT_EQ(classes[b][row][column].item<std::int64_t>(), mean > kHalf ? 1 : 0)
            << "image " << b << " row " << row << " column " << column << " mean " << mean;
        ASSERT_FLOAT_EQ(logits[b][1][row][column].item<float>(), static_cast<float>(mean - kHalf));
      }
    }
  }
  EXPECT_GT(at_threshold, 0) << "the input should have pixels exactly at the threshold";
}

TEST(SlowModel, ReturnsTheInnerModelsOutputUnchanged) {
  const auto x = two_images();
  for (auto& [name, inner] : all_models()) {
    auto wrapped = mgpr::test::slow(inner, 5);
    expect_same_output(run(wrapped, x), run(inner, x), name);
  }
}

fs::path scratch_file(const std::string& name) { return mgpr::test::program_temp_dir().path() / name; }

TEST(KnownModels, SaveAndLoadGiveTheSameOutputs) {
  const auto x = two_images();
  for (auto& [name, model] : all_models()) {
    const auto file = scratch_file(name + ".pt");
    model.save(file.string());
    auto loaded = torch::jit::load(file.string(), torch::kCPU);
    expect_same_output(run(loaded, x), run(model, x), name);
  }
}

// What the runtime does to every fp32 CPU model (model.cpp): eval, freeze, optimise.
TEST(KnownModels, OptimizeForInferenceKeepsOutputsAndTheSlowProducts) {
  const auto x = two_images();
  for (auto& [name, model] : all_models()) {
    model.eval();
    auto optimized = torch::jit::optimize_for_inference(model);
    expect_same_output(run(optimized, x), run(model, x), name);
    if (name.starts_with("slow")) {
      const auto graph = optimized.get_method("forward").graph()->toString();
      EXPECT_NE(graph.find("aten::mm"), std::string::npos) << graph;
    }
  }
}

// mgpr-test-model, as the Slurm tests run it: each kind saved by the tool loads back and
// answers as the model built here does, defaults included.
TEST(TestModelTool, SavesEachKindSoItLoadsWithTheSameOutputs) {
  struct Case {
    std::vector<std::string> arguments;
    torch::jit::Module expected;
  };
  const std::vector<Case> cases = {
      {{"detector"}, mgpr::test::threshold_detector(0.99, 64, DetectorStyle::kTensor)},
      {{"detector-dicts", "--max-boxes", "2"}, mgpr::test::threshold_detector(0.99, 2, DetectorStyle::kDicts)},
      {{"detector-tuple", "--threshold", "0.5"},
       mgpr::test::threshold_detector(0.5, 64, DetectorStyle::kTupleLossesDicts)},
      {{"segmenter", "--slow", "2"}, mgpr::test::threshold_segmenter(0.99)},
  };
  const auto x = two_images();
  for (auto [arguments, expected] : cases) {
    const auto file = scratch_file("tool-" + arguments[0] + ".pt");
    std::vector<std::string> argv = {MGPR_TEST_MODEL, arguments[0], file.string()};
    argv.insert(argv.end(), arguments.begin() + 1, arguments.end());
    const auto made = mgpr::run_command(argv);
    ASSERT_EQ(made.exit_code, 0) << arguments[0] << '\n' << made.out << made.err;
    EXPECT_FALSE(fs::exists(file.string() + ".partial"));
    auto loaded = torch::jit::load(file.string(), torch::kCPU);
    expect_same_output(run(loaded, x), run(expected, x), arguments[0]);
    if (arguments[0] == "segmenter") {
      EXPECT_EQ(loaded.attr("rounds").toInt(), 2);
    }
  }
}

TEST(TestModelTool, BadArgumentsExit2AndWriteNothing) {
  const auto file = scratch_file("bad.pt");
  const std::vector<std::vector<std::string>> cases = {{"classifier", file.string()},
                                                       {"detector"},
                                                       {"detector", file.string(), "--max-boxes", "0"},
                                                       {"detector", file.string(), "--slow", "-1"},
                                                       {"segmenter", file.string(), "--threshold", "nan"}};
  for (auto argv : cases) {
    argv.insert(argv.begin(), MGPR_TEST_MODEL);
    const auto result = mgpr::run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << argv[1] << '\n' << result.err;
    EXPECT_FALSE(result.err.empty()) << argv[1];
    EXPECT_FALSE(fs::exists(file));
  }
}

}  // namespace
