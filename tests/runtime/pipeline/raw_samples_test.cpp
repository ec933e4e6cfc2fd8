// 8- and 16-bit integer rasters travel raw (TileData::bytes) and are scaled where the
// model runs (pipeline/raw_scaler.hpp): the model sees exactly what the readers' own float
// conversion gives it, nodata pixels and the padding of edge tiles zeroed included, and
// UInt16's upper half (travelling as int16's bits) read back as unsigned.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>
#include <map>
#include <string>

#include "distributed/sharding.hpp"
#include "model/execution_policy.hpp"
#include "model/model.hpp"
#include "model_inputs.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/raw_scaler.hpp"
#include "source/tile_source.hpp"
#include "support/rasters.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace rt = mgpr::runtime;

constexpr int kTileSize = 64;

// A model that returns its input, so the test compares what the model was fed.
rt::TileModel identity_model(const std::string& dir, const rt::DeviceChoice& cpu) {
  return mgpr::test::identity_model(dir + "/identity.pt", cpu, 3, kTileSize);
}

rt::SourceOptions options_for(const std::string& raster, bool raw) {
  rt::SourceOptions options;
  options.rasters = {raster};
  options.tile_size = kTileSize;
  options.mean = {0.485, 0.456, 0.406};
  options.std = {0.229, 0.224, 0.225};
  options.raw_samples = raw;
  return options;
}

struct RawCase {
  GDALDataType type;
  rt::RawSample sample;
  std::size_t sample_size;
  torch::ScalarType travels_as;
};

class RawSamples : public testing::TestWithParam<RawCase> {};

TEST_P(RawSamples, ReachTheModelAsTheFloatPathFeedsThem) {
  const auto& param = GetParam();
  mgpr::test::TempDir dir;
  mgpr::test::RasterSpec spec;  // 200 x 150: edge tiles are padded; values over the type's range
  spec.type = param.type;
  spec.nodata = 0;  // some pixels missing in every band at once
  const auto raster = mgpr::test::write_raster(dir.file("rgb.tif"), spec);
  const auto as_float = rt::make_tile_source(options_for(raster, false));
  const auto as_raw = rt::make_tile_source(options_for(raster, true));
  EXPECT_FALSE(as_float->raw_scaling().has_value());
  ASSERT_TRUE(as_raw->raw_scaling().has_value());
  EXPECT_EQ(as_raw->raw_scaling()->gain.size(), 3U);
  EXPECT_EQ(as_raw->raw_scaling()->sample, param.sample);

  // The readers hand on the raster's own samples, not floats.
  rt::TileData tile;
  as_raw->open_reader()->read(as_raw->tiles().back(), tile);
  EXPECT_TRUE(tile.pixels.empty());
  EXPECT_EQ(tile.raw_sample, param.sample);
  EXPECT_EQ(tile.bytes.size(), 3U * kTileSize * kTileSize * param.sample_size);
  EXPECT_FALSE(tile.valid.empty()) << "an edge tile with nodata has a mask";
  EXPECT_EQ(rt::raw_dtype(param.sample), param.travels_as);

  auto model = identity_model(dir.path().string(), rt::DeviceChoice{});
  const auto expected = mgpr::test::model_inputs(*as_float, model);
  const auto fed = mgpr::test::model_inputs(*as_raw, model);
  ASSERT_EQ(expected.size(), as_float->tiles().size());
  ASSERT_EQ(fed.size(), expected.size());
  std::int64_t zeroed = 0;
  float highest = -1e9F;
  float lowest = 1e9F;
  for (const auto& [id, values] : expected) {
    const auto& raw_values = fed.at(id);
    EXPECT_TRUE(torch::allclose(raw_values, values, 1e-5, 1e-5))
        << "tile " << id.image << "/" << id.row << ": largest difference "
        << (raw_values - values).abs().max().item<float>();
    zeroed += (values == 0).all(0).sum().item<std::int64_t>();
    highest = std::max(highest, values[0].max().item<float>());
    lowest = std::min(lowest, values[0].min().item<float>());
  }
  EXPECT_GT(zeroed, 0) << "the raster should have missing or padded pixels, zero in every band";
  // Band 1 scaled by the type's range: (raw / range - 0.485) / 0.229 spans about
  // -2.1 (or -6.5 for Int16's negative half) to 2.2; a UInt16 read as signed would top
  // out near 0.07.
  EXPECT_GT(highest, 2.0F);
  EXPECT_LT(lowest, param.type == GDT_Int16 ? -6.0F : -2.0F);
}

INSTANTIATE_TEST_SUITE_P(Types, RawSamples,
                         testing::Values(RawCase{GDT_Byte, rt::RawSample::kUInt8, 1, torch::kByte},
                                         RawCase{GDT_UInt16, rt::RawSample::kUInt16, 2, torch::kShort},
                                         RawCase{GDT_Int16, rt::RawSample::kInt16, 2, torch::kShort}),
                         [](const testing::TestParamInfo<RawCase>& type_case) {
                           return std::string(GDALGetDataTypeName(type_case.param.type));
                         });

TEST(RawSamplesNot, FloatRastersStayFloatOnTheReaders) {
  mgpr::test::TempDir dir;
  mgpr::test::RasterSpec spec;
  spec.type = GDT_Float32;
  const auto raster = mgpr::test::write_raster(dir.file("f32.tif"), spec);
  const auto source = rt::make_tile_source(options_for(raster, true));
  EXPECT_FALSE(source->raw_scaling().has_value());
  rt::TileData tile;
  source->open_reader()->read(source->tiles().front(), tile);
  EXPECT_TRUE(tile.bytes.empty());
  EXPECT_EQ(tile.pixels.size(), 3U * kTileSize * kTileSize);
}

// Rasters of two integer types in one run: no one raw type fits both, so both stay float.
TEST(RawSamplesNot, RastersOfMixedTypesStayFloatOnTheReaders) {
  mgpr::test::TempDir dir;
  mgpr::test::RasterSpec bytes;
  mgpr::test::RasterSpec words;
  words.type = GDT_UInt16;
  auto options = options_for(mgpr::test::write_raster(dir.file("u8.tif"), bytes), true);
  options.rasters.push_back(mgpr::test::write_raster(dir.file("u16.tif"), words));
  const auto source = rt::make_tile_source(options);
  EXPECT_FALSE(source->raw_scaling().has_value());
  rt::TileData tile;
  source->open_reader()->read(source->tiles().back(), tile);
  EXPECT_TRUE(tile.bytes.empty());
  EXPECT_EQ(tile.pixels.size(), 3U * kTileSize * kTileSize);
}

}  // namespace
