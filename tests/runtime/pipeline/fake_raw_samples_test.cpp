// Fake tiles of dummy_dataset_type=uint8 or uint16 travel raw through the batch slots and
// are scaled where the model runs, as a Byte or UInt16 raster's are, so a build without
// GDAL (and a GPU machine with fake data only) runs the raw path too: the model is fed
// the float mode's values, each to float32's rounding of one multiplication.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <limits>
#include <map>
#include <string>

#include "distributed/sharding.hpp"
#include "model/execution_policy.hpp"
#include "model/model.hpp"
#include "model_inputs.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/raw_scaler.hpp"
#include "source/fake_source.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace rt = mgpr::runtime;

constexpr int kTileSize = 32;
constexpr int kTiles = 7;  // two batches of 3 and a short one

// A model that returns its input, so the test compares what the model was fed.
rt::TileModel identity_model(const rt::DeviceChoice& cpu) {
  return mgpr::test::identity_model((mgpr::test::program_temp_dir().path() / "fake_raw_identity.pt").string(), cpu,
                                    rt::kFakeChannels, kTileSize);
}

std::unique_ptr<rt::TileSource> fake_source(std::optional<rt::RawSample> sample) {
  rt::SourceOptions options;
  options.fake = rt::FakeDataOptions{kTiles, 0.0, sample};
  options.tile_size = kTileSize;
  options.raw_samples = true;  // as the run plan sets it
  return rt::make_tile_source(options);
}

struct FakeCase {
  rt::RawSample sample;
  const char* name;
};

class FakeRawSamples : public testing::TestWithParam<FakeCase> {};

TEST_P(FakeRawSamples, ReachTheModelAsTheFloatModesValues) {
  const auto source = fake_source(GetParam().sample);
  ASSERT_TRUE(source->raw_scaling().has_value());
  rt::TileData tile;
  source->open_reader()->read(source->tiles().front(), tile);
  EXPECT_TRUE(tile.pixels.empty());
  EXPECT_EQ(tile.raw_sample, GetParam().sample);
  EXPECT_EQ(tile.bytes.size(), rt::raw_sample_size(GetParam().sample) * rt::kFakeChannels * kTileSize * kTileSize);

  auto model = identity_model(rt::DeviceChoice{});
  const auto float_source = fake_source(std::nullopt);
  ASSERT_FALSE(float_source->raw_scaling().has_value());
  const auto expected = mgpr::test::model_inputs(*float_source, model);
  const auto fed = mgpr::test::model_inputs(*source, model);
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kTiles));
  ASSERT_EQ(fed.size(), expected.size());
  for (const auto& [id, values] : expected) {
    const auto& raw_values = fed.at(id);
    ASSERT_EQ(raw_values.sizes(), values.sizes());
    EXPECT_EQ(raw_values.scalar_type(), torch::kFloat);
    // raw * (1 / range) in float32 against raw / range: at most one unit in the last
    // place apart, which for values in [0, 1] is within epsilon times the value.
    const auto apart = (raw_values - values).abs();
    EXPECT_TRUE((apart <= values.abs() * std::numeric_limits<float>::epsilon()).all().item<bool>())
        << "tile " << id.row << ": largest difference " << apart.max().item<float>();
    EXPECT_GT(values.max().item<float>(), 0.9F);
    EXPECT_LT(values.min().item<float>(), 0.1F);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, FakeRawSamples,
                         testing::Values(FakeCase{rt::RawSample::kUInt8, "uint8"},
                                         FakeCase{rt::RawSample::kUInt16, "uint16"}),
                         [](const testing::TestParamInfo<FakeCase>& type_case) { return type_case.param.name; });

}  // namespace
