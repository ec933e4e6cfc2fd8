#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "source/fake_source.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"

namespace {

using mgpr::runtime::PixelWindow;
using mgpr::runtime::RawSample;
using mgpr::runtime::SourceOptions;
using mgpr::runtime::Tile;
using mgpr::runtime::TileData;
using mgpr::runtime::TileId;

SourceOptions fake(int count, int tile_size, double delay_s = 0, std::optional<RawSample> sample = std::nullopt,
                   bool raw_samples = true) {
  SourceOptions options;
  options.fake = mgpr::runtime::FakeDataOptions{count, delay_s, sample};
  options.tile_size = tile_size;
  options.raw_samples = raw_samples;
  return options;
}

TileData read_tile(const mgpr::runtime::TileSource& source, std::size_t index) {
  TileData data;
  source.open_reader()->read(source.tiles().at(index), data);
  return data;
}

TEST(FakeSource, HasTheConfiguredTiles) {
  auto config = fake(5, 32);
  config.rasters = {"ignored.tif"};  // use_fake_data wins, as in the original project
  const auto source = mgpr::runtime::make_tile_source(config);
  ASSERT_EQ(source->tiles().size(), 5U);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(source->tiles()[static_cast<std::size_t>(i)].id, (TileId{0, i, 0}));
    EXPECT_EQ(source->tiles()[static_cast<std::size_t>(i)].window, (PixelWindow{0, 0, 32, 32}));
  }
  EXPECT_EQ(source->channels(), 3);
  EXPECT_EQ(source->tile_size(), 32);
  EXPECT_TRUE(source->rasters().empty());
}

TEST(FakeSource, ContentIsDeterministicPerTileAndNotConstant) {
  const auto first = mgpr::runtime::make_tile_source(fake(4, 16));
  const auto second = mgpr::runtime::make_tile_source(fake(4, 16));
  const auto tile2 = read_tile(*first, 2);
  ASSERT_EQ(tile2.channels, 3);
  ASSERT_EQ(tile2.height, 16);
  ASSERT_EQ(tile2.width, 16);
  ASSERT_EQ(tile2.pixels.size(), 3U * 16U * 16U);
  EXPECT_TRUE(tile2.valid.empty());
  EXPECT_EQ(tile2.tile.id, (TileId{0, 2, 0}));
  EXPECT_EQ(tile2.pixels, read_tile(*second, 2).pixels);
  EXPECT_NE(tile2.pixels, read_tile(*first, 3).pixels);
  const auto [low, high] = std::minmax_element(tile2.pixels.begin(), tile2.pixels.end());
  EXPECT_LT(*low, *high);
  EXPECT_GE(*low, 0.0F);
  EXPECT_LE(*high, 1.0F);
  // CHW layout with the documented formula.
  EXPECT_EQ(tile2.pixels[(1 * 16 + 5) * 16 + 9], mgpr::runtime::fake_pixel(2, 1, 5, 9));
}

TEST(FakeSource, SleepsTheDelayPerTile) {
  const auto source = mgpr::runtime::make_tile_source(fake(3, 8, 0.05));
  const auto reader = source->open_reader();
  TileData data;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& tile : source->tiles()) reader->read(tile, data);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(elapsed, 0.15);
  EXPECT_LT(elapsed, 2.0);
  EXPECT_GE(data.read_s, 0.05);
}

TEST(FakeSource, WorkersOverlapTheDelay) {
  const auto source = mgpr::runtime::make_tile_source(fake(8, 8, 0.1));
  std::size_t next = 0;
  std::mutex feed_mutex;
  const auto start = std::chrono::steady_clock::now();
  mgpr::runtime::ReaderPool pool(
      *source, 4,
      [&]() -> std::optional<Tile> {
        const std::lock_guard lock(feed_mutex);
        return next < source->tiles().size() ? std::optional(source->tiles()[next++]) : std::nullopt;
      },
      8);
  int tiles = 0;
  while (pool.next()) ++tiles;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tiles, 8);
  EXPECT_LT(elapsed, 0.6) << "8 tiles of 0.1 s on 4 workers should take about 0.2 s, not 0.8 s";
}

// Fake tiles of an integer type travel raw as a Byte or UInt16 raster's do: the samples
// are fake_pixel()'s integers in the type, and the scaling over the type's range gives
// the float mode's values back.
TEST(FakeSource, Uint8TilesTravelRawAsTheFloatPatternTimes255) {
  constexpr int kSide = 16;
  const auto source = mgpr::runtime::make_tile_source(fake(4, kSide, 0, RawSample::kUInt8));
  const auto scaling = source->raw_scaling();
  ASSERT_TRUE(scaling.has_value());
  EXPECT_EQ(scaling->sample, RawSample::kUInt8);
  EXPECT_EQ(scaling->gain, std::vector<float>(3, static_cast<float>(1.0 / 255.0)));
  EXPECT_EQ(scaling->offset, std::vector<float>(3, 0.0F));
  const auto tile = read_tile(*source, 2);
  EXPECT_TRUE(tile.pixels.empty());
  EXPECT_TRUE(tile.valid.empty()) << "every fake pixel is data";
  EXPECT_EQ(tile.raw_sample, RawSample::kUInt8);
  ASSERT_EQ(tile.bytes.size(), 3U * kSide * kSide);
  std::size_t at = 0;
  for (int channel = 0; channel < 3; ++channel) {
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x, ++at) {
        // The integer the float pattern is made from: fake_pixel() is it divided by 255.
        ASSERT_EQ(static_cast<float>(tile.bytes[at]) / 255.0F, mgpr::runtime::fake_pixel(2, channel, y, x))
            << channel << "/" << y << "/" << x;
      }
    }
  }
  EXPECT_NE(tile.bytes, read_tile(*source, 3).bytes);
}

TEST(FakeSource, Uint16TilesSpanTheTypesRangeInTheMachinesByteOrder) {
  constexpr int kSide = 16;
  const auto source = mgpr::runtime::make_tile_source(fake(4, kSide, 0, RawSample::kUInt16));
  const auto scaling = source->raw_scaling();
  ASSERT_TRUE(scaling.has_value());
  EXPECT_EQ(scaling->sample, RawSample::kUInt16);
  EXPECT_EQ(scaling->gain, std::vector<float>(3, static_cast<float>(1.0 / 65535.0)));
  EXPECT_EQ(scaling->offset, std::vector<float>(3, 0.0F));
  const auto tile = read_tile(*source, 1);
  EXPECT_TRUE(tile.pixels.empty());
  EXPECT_EQ(tile.raw_sample, RawSample::kUInt16);
  ASSERT_EQ(tile.bytes.size(), 3U * kSide * kSide * 2U);
  std::uint16_t highest = 0;
  std::size_t at = 0;
  for (int channel = 0; channel < 3; ++channel) {
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x, at += 2) {
        std::uint16_t sample = 0;
        std::memcpy(&sample, tile.bytes.data() + at, sizeof sample);
        ASSERT_EQ(sample % 257, 0) << "a fake uint16 is 257 times the pattern's 0..255";
        ASSERT_EQ(static_cast<float>(sample) / 65535.0F, mgpr::runtime::fake_pixel(1, channel, y, x));
        highest = std::max(highest, sample);
      }
    }
  }
  EXPECT_GT(highest, 255) << "the samples use the upper byte";
}

// Without raw_samples the readers convert the integers to float as they do a raster's,
// which gives the float mode's tiles to the bit.
TEST(FakeSource, IntegerTilesConvertedOnTheReadersAreTheFloatTiles) {
  const auto as_float = mgpr::runtime::make_tile_source(fake(3, 8));
  EXPECT_FALSE(as_float->raw_scaling().has_value());
  for (const auto sample : {RawSample::kUInt8, RawSample::kUInt16}) {
    const auto converted = mgpr::runtime::make_tile_source(fake(3, 8, 0, sample, false));
    EXPECT_FALSE(converted->raw_scaling().has_value());
    for (std::size_t index = 0; index < 3; ++index) {
      const auto tile = read_tile(*converted, index);
      EXPECT_TRUE(tile.bytes.empty());
      EXPECT_EQ(tile.pixels, read_tile(*as_float, index).pixels);
    }
  }
  // Float tiles stay float whether or not raw samples are allowed.
  EXPECT_FALSE(mgpr::runtime::make_tile_source(fake(3, 8, 0, std::nullopt, true))->raw_scaling().has_value());
}

TEST(FakeSource, TheTypeIsChosenByNameAndABadOneIsRefusedWithTheChoices) {
  EXPECT_EQ(mgpr::runtime::parse_fake_data_type("float32"), std::nullopt);
  EXPECT_EQ(mgpr::runtime::parse_fake_data_type("uint8"), RawSample::kUInt8);
  EXPECT_EQ(mgpr::runtime::parse_fake_data_type("uint16"), RawSample::kUInt16);
  try {
    (void)mgpr::runtime::parse_fake_data_type("int8");
    FAIL() << "int8 was taken";
  } catch (const mgpr::UsageError& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("dummy_dataset_type=int8"));
    EXPECT_THAT(error.what(), testing::HasSubstr("float32, uint8, uint16"));
  }
  // The configuration refuses it first, with the same choices.
  mgpr::RunConfig config;
  mgpr::apply_override(config, "dummy_dataset_type=uint16");
  EXPECT_EQ(config.dummy_dataset_type, "uint16");
  try {
    mgpr::apply_override(config, "dummy_dataset_type=byte");
    FAIL() << "byte was taken";
  } catch (const mgpr::UsageError& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("dummy_dataset_type"));
    EXPECT_THAT(error.what(), testing::HasSubstr("float32, uint8, uint16"));
    EXPECT_THAT(error.what(), testing::HasSubstr("'byte'"));
  }
  // Int16 is a raster type, not a fake one.
  EXPECT_THROW((void)mgpr::runtime::make_tile_source(fake(4, 16, 0, RawSample::kInt16)), mgpr::UsageError);
}

TEST(FakeSource, BadKeysAreUsageErrors) {
  EXPECT_THROW((void)mgpr::runtime::make_tile_source(fake(4, 16, -1.0)), mgpr::UsageError);
  EXPECT_THROW((void)mgpr::runtime::make_tile_source(fake(0, 16)), mgpr::UsageError);
  EXPECT_THROW((void)mgpr::runtime::make_tile_source(fake(4, 0)), mgpr::UsageError);
  try {
    (void)mgpr::runtime::make_tile_source(fake(4, 1 << 16));
    FAIL() << "a 65536-pixel tile was accepted";
  } catch (const mgpr::UsageError& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("tile_size=65536 makes 48.0 GiB"));
  }
}

}  // namespace

#ifndef MGPR_HAVE_GDAL
namespace {
TEST(FakeSource, ABuildWithoutGdalRefusesRastersByName) {
  SourceOptions config;
  config.rasters = {"ortho.tif"};
  try {
    (void)mgpr::runtime::make_tile_source(config);
    FAIL() << "a GDAL-less build accepted a raster";
  } catch (const mgpr::UsageError& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("reads fake data only"));
    EXPECT_THAT(error.what(), testing::HasSubstr("'ortho.tif'"));
    EXPECT_THAT(error.what(), testing::HasSubstr("use_fake_data=true"));
  }
}
}  // namespace
#endif
