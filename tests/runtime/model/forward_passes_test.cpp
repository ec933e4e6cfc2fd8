// A batch run as several forward passes on a CPU: the passes' outputs joined along the
// tile axis for every output the tasks accept (a tensor, torchvision's list of dicts and
// its (losses, detections) tuple), each tile getting what the whole batch would have
// given it; and a model whose output does not split by tile running its batches whole.
// The models record the size of the pass that ran each tile, so the passes are seen.
#include <gtest/gtest.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "model/model.hpp"
#include "model/tile_outputs.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace rt = mgpr::runtime;
using mgpr::Precision;

fs::path save_module(const std::string& name, const std::string& source) {
  torch::jit::Module module(name);
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(source);
  const auto file = mgpr::test::program_temp_dir().path() / (name + ".pt");
  module.save(file.string());
  return file;
}

// Per tile: its mean and the number of tiles in the pass that ran it.
const char* const kMeanAndPass = R"(
def forward(self, x):
    m = torch.mean(x, [1, 2, 3])
    return torch.stack([m, m * 0 + x.size(0)], 1)
)";

// torchvision's scripted detectors' shape: (losses, one dict per tile), the dict's boxes
// [1, 4] holding the tile's mean and its pass's size, its labels the tile's row in the pass.
const char* const kDetections = R"(
def forward(self, x):
    images: List[Dict[str, Tensor]] = []
    for i in range(x.size(0)):
        m = x[i].mean()
        images.append({"boxes": torch.stack([m, m * 0 + x.size(0), m, m]).unsqueeze(0), "labels": torch.tensor([i])})
    losses: Dict[str, Tensor] = {}
    return (losses, images)
)";

// Not per tile: one row for the whole input, whatever its tiles.
const char* const kWholeInput = R"(
def forward(self, x):
    m = torch.mean(x)
    return torch.stack([m, m * 0 + x.size(0), m])
)";

rt::TileModel load(const fs::path& file, int batch_size, int cpu_forward_tiles) {
  const rt::DeviceChoice cpu{};
  const auto plans =
      rt::plan_execution({Precision::kFp32, false, true, batch_size, 8, cpu_forward_tiles}, rt::execution_facts(cpu));
  return rt::TileModel({file.string(), {}, 8}, cpu, 3, plans);
}

// Tile t's pixels are all t + 1: its mean says which tile it is.
torch::Tensor numbered_tiles(int tiles) {
  return (torch::arange(1, tiles + 1, torch::kFloat).reshape({tiles, 1, 1, 1}) * torch::ones({tiles, 3, 8, 8}))
      .contiguous();
}

TEST(ForwardPasses, ATensorOutputIsJoinedTileByTile) {
  auto model = load(save_module("MeanAndPass", kMeanAndPass), 10, 4);
  EXPECT_NE(model.description().find("4 tiles a pass"), std::string::npos) << model.description();
  const auto output = model.forward(numbered_tiles(10)).toTensor();
  ASSERT_EQ(output.sizes(), (std::vector<std::int64_t>{10, 2}));
  const std::vector<float> pass_of_tile{4, 4, 4, 4, 4, 4, 4, 4, 2, 2};
  for (int t = 0; t < 10; ++t) {
    EXPECT_FLOAT_EQ(output[t][0].item<float>(), static_cast<float>(t + 1)) << "tile " << t;
    EXPECT_FLOAT_EQ(output[t][1].item<float>(), pass_of_tile[static_cast<std::size_t>(t)]) << "tile " << t;
  }
}

// Rows given pass by pass (raw tiles scaled a pass at a time): each pass asks for its own
// rows, in order, and the output is what the whole batch gives.
TEST(ForwardPasses, RowsAreAskedForAPassAtATime) {
  auto model = load(save_module("MeanAndPass", kMeanAndPass), 10, 4);
  const auto batch = numbered_tiles(10);
  std::vector<std::pair<std::int64_t, std::int64_t>> asked;
  const auto output = model
                          .forward(10,
                                   [&](std::int64_t first, std::int64_t count) {
                                     asked.emplace_back(first, count);
                                     return batch.narrow(0, first, count).clone();
                                   })
                          .toTensor();
  EXPECT_EQ(asked, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 4}, {4, 4}, {8, 2}}));
  EXPECT_TRUE(torch::equal(output, model.forward(batch).toTensor()));
  asked.clear();
  model.forward(3, [&](std::int64_t first, std::int64_t count) {
    asked.emplace_back(first, count);
    return batch.narrow(0, first, count);
  });
  EXPECT_EQ(asked, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 3}})) << "a short batch is one pass";
}

TEST(ForwardPasses, TorchvisionsLossesAndDetectionsAreJoinedTileByTile) {
  auto model = load(save_module("Detections", kDetections), 7, 3);
  const auto output = model.forward(numbered_tiles(7));
  ASSERT_TRUE(output.isTuple());
  const auto& elements = output.toTupleRef().elements();
  ASSERT_EQ(elements.size(), 2U);
  EXPECT_EQ(elements[0].toGenericDict().size(), 0U);
  const auto images = elements[1].toList();
  ASSERT_EQ(images.size(), 7U);
  const std::vector<float> pass_of_tile{3, 3, 3, 3, 3, 3, 1};
  const std::vector<std::int64_t> row_in_pass{0, 1, 2, 0, 1, 2, 0};
  for (std::size_t t = 0; t < images.size(); ++t) {
    const auto image = images.get(t).toGenericDict();
    const auto boxes = image.at("boxes").toTensor();
    EXPECT_FLOAT_EQ(boxes[0][0].item<float>(), static_cast<float>(t + 1)) << "tile " << t;
    EXPECT_FLOAT_EQ(boxes[0][1].item<float>(), pass_of_tile[t]) << "tile " << t;
    EXPECT_EQ(image.at("labels").toTensor()[0].item<std::int64_t>(), row_in_pass[t]) << "tile " << t;
  }
}

// The task's reduction (task=segment's on a GPU) gets the batch's output whole, its
// passes joined, under InferenceMode, and forward() returns what it returns; the dummy
// tile's output, made before, stays the model's own.
TEST(ForwardPasses, TheOutputReductionTakesTheJoinedBatchOutput) {
  auto model = load(save_module("MeanAndPass", kMeanAndPass), 10, 4);
  const auto dummy = model.dummy_output().toTensor().clone();
  std::vector<std::vector<std::int64_t>> seen;
  bool in_inference_mode = false;
  model.set_output_reduction([&](const torch::IValue& output) -> torch::IValue {
    seen.push_back(output.toTensor().sizes().vec());
    in_inference_mode = c10::InferenceMode::is_enabled();
    return output.toTensor().select(1, 0);  // the tiles' means only
  });
  const auto reduced = model.forward(numbered_tiles(10)).toTensor();
  EXPECT_EQ(seen, (std::vector<std::vector<std::int64_t>>{{10, 2}})) << "once a batch, after the passes are joined";
  EXPECT_TRUE(in_inference_mode);
  EXPECT_TRUE(torch::equal(reduced, torch::arange(1, 11, torch::kFloat)));
  EXPECT_TRUE(torch::equal(model.dummy_output().toTensor(), dummy));
  model.set_output_reduction({});
  EXPECT_EQ(model.forward(numbered_tiles(2)).toTensor().sizes(), (std::vector<std::int64_t>{2, 2}))
      << "unset, the output is whole again";
}

TEST(ForwardPasses, AModelWhoseOutputIsNotPerTileRunsItsBatchesWhole) {
  auto model = load(save_module("WholeInput", kWholeInput), 10, 4);
  for (int batch = 0; batch < 2; ++batch) {
    const auto output = model.forward(numbered_tiles(10)).toTensor();
    ASSERT_EQ(output.sizes(), (std::vector<std::int64_t>{3}));
    EXPECT_FLOAT_EQ(output[0].item<float>(), 5.5F) << "batch " << batch;  // the mean of 1..10
    EXPECT_FLOAT_EQ(output[1].item<float>(), 10.0F) << "batch " << batch;
  }
}

TEST(ForwardPasses, JoiningRefusesWhatDoesNotSplitByTile) {
  const std::vector<std::int64_t> two_and_one{2, 1};
  const auto join = [&](torch::IValue a, torch::IValue b) {
    const std::vector<torch::IValue> parts{std::move(a), std::move(b)};
    return rt::join_tile_outputs(parts, two_and_one);
  };
  // Tiles along the first axis: joined.
  const auto joined = join(torch::zeros({2, 5}), torch::ones({1, 5}));
  ASSERT_TRUE(joined.has_value());
  EXPECT_TRUE(torch::equal(joined->toTensor(), torch::cat({torch::zeros({2, 5}), torch::ones({1, 5})})));
  // A first axis other than the pass's tiles, a scalar, other trailing shapes, a type
  // that is not a container of tensors, structures that differ: refused.
  EXPECT_FALSE(join(torch::zeros({3, 5}), torch::ones({1, 5})).has_value());
  EXPECT_FALSE(join(torch::zeros({}), torch::zeros({})).has_value());
  EXPECT_FALSE(join(torch::zeros({2, 5}), torch::ones({1, 4})).has_value());
  EXPECT_FALSE(join(torch::IValue(2.0), torch::IValue(1.0)).has_value());
  EXPECT_FALSE(join(torch::zeros({2, 5}), c10::ivalue::Tuple::create({torch::ones({1, 5})})).has_value());
  c10::impl::GenericList three(c10::TensorType::get());
  for (int i = 0; i < 3; ++i) three.push_back(torch::zeros({1}));
  c10::impl::GenericList one(c10::TensorType::get());
  one.push_back(torch::zeros({1}));
  EXPECT_FALSE(join(three, one).has_value());
  // One pass: its output as it is, whatever it holds.
  const std::vector<torch::IValue> single{torch::IValue(7.0)};
  const std::vector<std::int64_t> five{5};
  EXPECT_EQ(rt::join_tile_outputs(single, five)->toDouble(), 7.0);
}

}  // namespace
