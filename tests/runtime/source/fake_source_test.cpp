#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <vector>

#include "mgpr/error.hpp"
#include "source/fake_source.hpp"
#include "source/reader_pool.hpp"
#include "source/tile_source.hpp"

namespace {

using mgpr::runtime::PixelWindow;
using mgpr::runtime::SourceOptions;
using mgpr::runtime::Tile;
using mgpr::runtime::TileData;
using mgpr::runtime::TileId;

SourceOptions fake(int count, int tile_size, double delay_s = 0) {
  SourceOptions options;
  options.fake = mgpr::runtime::FakeDataOptions{count, delay_s};
  options.tile_size = tile_size;
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
