// Where each crop's pixels come from, and how they are resized, with a classifier whose
// score moves with every pixel: each crop resized as upsample_bilinear2d resizes it alone,
// and crops that reach past their tile read from the raster (a raster held in memory
// here), or cut at the tile's edge when the raster refuses them. The squares' known
// answers and the pipeline's path are in crop_classifier_test.cpp.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "crops/crop_classifier.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"

namespace {

namespace rt = mgpr::runtime;

constexpr int kInput = 16;  // the classifier's input side

// A classifier whose three logits are ten times the mean of each band of its input:
// its score (the largest softmax probability) moves with every resized pixel.
std::filesystem::path band_means_classifier() {
  const auto file = mgpr::test::program_temp_dir().path() / "band-means.pt";
  torch::jit::Module module("BandMeans");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.define(R"(
def forward(self, x):
    return torch.mean(x, dim=[2, 3]) * 10.0
)");
  module.save(file.string());
  return file;
}

// Each crop resized on its own by upsample_bilinear2d (no align_corners) gives what the
// classifier saw: crops smaller and larger than its input, one cut by the tile's edge,
// one as wide as the tile, boxes at fractional corners, with a margin.
TEST(CropClassifierResize, EveryCropIsResizedAsUpsampleBilinearResizesItAlone) {
  constexpr int kTileSide = 40;
  torch::manual_seed(3);
  const auto tiles = torch::rand({2, 3, kTileSide, kTileSide});
  const std::vector<std::vector<rt::Box>> boxes{
      {{{}, 2.5, 3.2, 5.1, 6.9}, {{}, 0, 0, 40, 40}, {{}, 30.2, 1, 44, 9}},
      {{{}, 10, 12, 33, 37.5}, {{}, 7, 20, 8, 21}},
  };
  constexpr int kMargin = 1;
  const auto device = rt::DeviceChoice{};
  rt::CropClassifierOptions options;
  options.model = {band_means_classifier().string(), {}, kInput, "", {}};
  options.margin = kMargin;
  options.batch_size = 3;  // batches that end inside a tile's crops
  const auto plans = rt::plan_execution({mgpr::Precision::kFp32, false, true}, rt::execution_facts(device));
  rt::CropClassifier crops(options, device, 3, plans, std::nullopt);
  const auto classes = crops.classify({tiles}, boxes);
  ASSERT_EQ(classes.size(), 2U);
  for (std::size_t tile = 0; tile < boxes.size(); ++tile) {
    ASSERT_EQ(classes[tile].size(), boxes[tile].size());
    for (std::size_t i = 0; i < boxes[tile].size(); ++i) {
      const auto& box = boxes[tile][i];
      const auto cut = [](double at, std::int64_t limit) {
        return std::clamp<std::int64_t>(static_cast<std::int64_t>(at), 0, limit);
      };
      const auto x1 = cut(std::floor(box.x1 - kMargin), kTileSide);
      const auto y1 = cut(std::floor(box.y1 - kMargin), kTileSide);
      const auto x2 = cut(std::ceil(box.x2 + kMargin), kTileSide);
      const auto y2 = cut(std::ceil(box.y2 + kMargin), kTileSide);
      const auto crop = tiles[static_cast<std::int64_t>(tile)].slice(1, y1, y2).slice(2, x1, x2).unsqueeze(0);
      const auto resized = torch::upsample_bilinear2d(crop, {kInput, kInput}, false);
      const auto [score, label] = torch::softmax(torch::mean(resized, {2, 3}) * 10.0, 1).max(1);
      EXPECT_EQ(classes[tile][i].label, label.item<std::int64_t>()) << "tile " << tile << " box " << i;
      EXPECT_NEAR(classes[tile][i].score, score.item<double>(), 1e-5) << "tile " << tile << " box " << i;
    }
  }
}

// A raster held whole in memory, read as the run's readers read one: the window's
// float32 values at the top left of a tile-sized buffer, 0 elsewhere. Counts its reads;
// with `refuse`, fails every one as a read that failed for good does.
class MemoryRaster final : public rt::TileReader {
 public:
  MemoryRaster(torch::Tensor raster, int side, int& reads, bool refuse)
      : raster_(std::move(raster)), side_(side), reads_(reads), refuse_(refuse) {}
  void read(const rt::Tile& tile, rt::TileData& out) override {
    ++reads_;
    if (refuse_) throw std::runtime_error("the raster in memory refuses every read");
    const auto& window = tile.window;
    auto buffer = torch::zeros({raster_.size(0), side_, side_});
    buffer.slice(1, 0, window.height)
        .slice(2, 0, window.width)
        .copy_(raster_.slice(1, window.y, window.y + window.height).slice(2, window.x, window.x + window.width));
    out.tile = tile;
    out.channels = static_cast<int>(raster_.size(0));
    out.height = side_;
    out.width = side_;
    out.pixels.assign(buffer.data_ptr<float>(), buffer.data_ptr<float>() + buffer.numel());
    out.bytes.clear();
    out.valid.clear();
  }

 private:
  torch::Tensor raster_;  // [C, H, W] float32
  int side_;
  int& reads_;
  bool refuse_;
};

// Two tiles side by side over a 64 x 32 raster, crops with a margin of 4: those that reach
// past their tile into the other are read from the raster and classified as the raster's
// own crops are; those in their tile, stopped by the raster's edge, or larger than a tile
// are not read. When the raster refuses the reads (`refused`), every crop is cut at its
// tile's edge, as without reads, and the run goes on.
void expect_crops_past_their_tile_read_from_the_raster(const rt::DeviceChoice& device, bool refused = false) {
  constexpr int kTile = 32;
  constexpr int kMargin = 4;
  torch::manual_seed(5);
  // Random, with a stripe bright in band 1 just past the first tile's edge and one in band
  // 2 just before it, so that a crop's class scores tell what lies past its tile's edge.
  auto raster = torch::rand({3, kTile, 2 * kTile});
  raster[0].slice(1, kTile, kTile + kMargin).fill_(1.0);
  raster[1].slice(1, kTile - kMargin, kTile).fill_(1.0);
  std::vector<rt::TileData> tiles(2);
  tiles[0].tile = {{0, 0, 0}, {0, 0, kTile, kTile}};
  tiles[1].tile = {{0, 0, 1}, {kTile, 0, kTile, kTile}};
  const auto batch = torch::stack({raster.slice(2, 0, kTile), raster.slice(2, kTile, 2 * kTile)});
  const std::vector<std::vector<rt::Box>> boxes{
      {{{}, 24, 8, 30, 16}, {{}, 4, 4, 12, 12}},                       // into tile 1; inside
      {{{}, 1, 20, 6, 26}, {{}, 28, 4, 32, 10}, {{}, 2, 0, 30, 30}}};  // into tile 0; the edge; larger
  const auto make = [&] {
    rt::CropClassifierOptions options;
    options.model = {band_means_classifier().string(), {}, kInput, "", {}};
    options.margin = kMargin;
    const auto plans = rt::plan_execution({mgpr::Precision::kFp32, false, true}, rt::execution_facts(device));
    return rt::CropClassifier(options, device, 3, plans, std::nullopt);
  };
  int reads = 0;
  auto reading = make();
  reading.read_past_tiles({std::make_unique<MemoryRaster>(raster, kTile, reads, refused), {{2 * kTile, kTile}}});
  testing::internal::CaptureStderr();
  const auto classes = reading.classify({batch}, boxes, tiles);
  const auto warned = testing::internal::GetCapturedStderr();
  EXPECT_EQ(reads, 2) << "the two crops that reach into the other tile, and no other";
  // The truth: the raster as one tile. And crops cut at their tile's edge, as without reads.
  auto whole = make();
  std::vector<rt::Box> shifted = boxes[0];
  for (auto box : boxes[1]) {
    box.x1 += kTile;
    box.x2 += kTile;
    shifted.push_back(box);
  }
  const auto truth = whole.classify({raster.unsqueeze(0)}, std::vector<std::vector<rt::Box>>{shifted})[0];
  const auto cut = make().classify({batch}, boxes);
  ASSERT_EQ(classes.size(), 2U);
  ASSERT_EQ(classes[0].size(), 2U);
  ASSERT_EQ(classes[1].size(), 3U);
  const std::vector<rt::CropClass> found{classes[0][0], classes[0][1], classes[1][0], classes[1][1], classes[1][2]};
  const std::vector<rt::CropClass> expected = refused
                                                  ? std::vector{cut[0][0], cut[0][1], cut[1][0], cut[1][1], cut[1][2]}
                                                  : std::vector{truth[0], truth[1], truth[2], truth[3], cut[1][2]};
  for (std::size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].label, expected[i].label) << "box " << i;
    EXPECT_NEAR(found[i].score, expected[i].score, 1e-5) << "box " << i;
  }
  // A refusal is told once, naming what the reader said.
  EXPECT_EQ(mgpr::test::count(warned, "could not be read from the raster (the raster in memory refuses"),
            refused ? 1U : 0U)
      << warned;
  // The crops read differ from those cut at the tile's edge: the test tells them apart.
  EXPECT_GT(std::abs(cut[0][0].score - truth[0].score), 1e-3);
  EXPECT_GT(std::abs(cut[1][0].score - truth[2].score), 1e-3);
}

TEST(CropClassifierReads, ACropPastItsTileIsReadFromTheRaster) {
  expect_crops_past_their_tile_read_from_the_raster({});
}

TEST(CropClassifierReads, ACropTheRasterRefusesIsCutAtItsTilesEdge) {
  expect_crops_past_their_tile_read_from_the_raster({}, true);
}

TEST(CropClassifierReads, OnAGpuACropPastItsTileIsReadFromTheRaster) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
  }
  expect_crops_past_their_tile_read_from_the_raster({torch::Device(torch::kCUDA, 0), true, "a GPU"});
}

}  // namespace
