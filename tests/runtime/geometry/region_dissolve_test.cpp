// Regions joined across tile seams a row of tiles at a time give the regions of the
// whole raster, whatever the classes and tiles: random class rasters cut into the tile
// cores task=segment writes, every core's regions found alone, then dissolved row by
// row, must group the pixels as the whole raster's regions do; and a group is given back
// as soon as no later row can reach it.
#include "geometry/region_dissolve.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "geometry/segment_layout.hpp"
#include "geometry/tiler.hpp"

namespace {

using mgpr::runtime::class_regions;
using mgpr::runtime::CoreSeams;
using mgpr::runtime::PixelWindow;
using mgpr::runtime::RegionDissolve;

std::array<bool, 256> leaving_out_zero() {
  std::array<bool, 256> out{};
  out[0] = true;
  return out;
}

// Blobs of classes 0 to 2 over a width x height raster: random rectangles painted over
// each other, with thin lines so that shapes cross seams at single pixels and corners.
std::vector<std::uint8_t> random_classes(std::mt19937& random, int width, int height) {
  std::vector<std::uint8_t> classes(static_cast<std::size_t>(width) * height, 0);
  std::uniform_int_distribution<int> x(0, width - 1);
  std::uniform_int_distribution<int> y(0, height - 1);
  std::uniform_int_distribution<int> side(1, 30);
  std::uniform_int_distribution<int> value(0, 2);
  for (int i = 0; i < 120; ++i) {
    const int x0 = x(random);
    const int y0 = y(random);
    const bool line = i % 3 == 0;
    const int w = line ? 1 : side(random);
    const int h = line ? side(random) * 2 : side(random);
    const auto c = static_cast<std::uint8_t>(value(random));
    for (int yy = y0; yy < std::min(height, y0 + h); ++yy) {
      for (int xx = x0; xx < std::min(width, x0 + w); ++xx) classes[static_cast<std::size_t>(yy) * width + xx] = c;
    }
  }
  return classes;
}

TEST(RegionDissolve, RowByRowGivesTheWholeRastersRegions) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int width = 150 + trial * 7;
    const int height = 120 + trial * 5;
    const int tile = 40 + trial % 3 * 16;
    const int overlap = trial % 4 * 6;
    const auto classes = random_classes(random, width, height);
    // The whole raster's regions: the truth.
    const auto whole = class_regions(classes, {}, PixelWindow{0, 0, width, height}, CoreSeams{}, leaving_out_zero());

    // Per pixel, the group the dissolve put it in (by the group's first handle).
    std::vector<std::int64_t> group_of(classes.size(), -1);
    // Every core's window and labels, and per handle its core and label there.
    std::vector<std::pair<PixelWindow, std::vector<std::int32_t>>> all_cores;
    std::map<std::size_t, std::pair<std::size_t, std::int32_t>> place_of_handle;
    RegionDissolve dissolve;
    std::size_t next_handle = 0;
    std::set<std::size_t> given_back;
    const auto tiles = mgpr::runtime::tile_image(0, width, height, tile, overlap);
    std::size_t at = 0;
    while (at < tiles.size()) {
      const int row = tiles[at].id.row;
      std::vector<mgpr::runtime::CoreRegions> cores;
      for (; at < tiles.size() && tiles[at].id.row == row; ++at) {
        const auto core = mgpr::runtime::tile_core(tiles[at], width, height, tile, overlap);
        std::vector<std::uint8_t> piece(static_cast<std::size_t>(core.width) * core.height);
        for (int y = 0; y < core.height; ++y) {
          for (int x = 0; x < core.width; ++x) {
            piece[static_cast<std::size_t>(y) * core.width + x] =
                classes[static_cast<std::size_t>(core.y + y) * width + core.x + x];
          }
        }
        const CoreSeams seams{core.y > 0, core.y + core.height<height, core.x> 0, core.x + core.width < width};
        cores.push_back(class_regions(piece, {}, core, seams, leaving_out_zero()));
        all_cores.emplace_back(core, cores.back().labels);
      }
      std::vector<RegionDissolve::Region> regions;
      const auto first_handle = next_handle;
      const auto first_core = all_cores.size() - cores.size();
      for (std::size_t c = 0; c < cores.size(); ++c) {
        for (std::size_t r = 0; r < cores[c].regions.size(); ++r) {
          regions.push_back({cores[c].regions[r].class_value, cores[c].regions[r].seams});
          place_of_handle[next_handle++] = {first_core + c, static_cast<std::int32_t>(r + 1)};
        }
      }
      const bool last = at == tiles.size();
      for (const auto& group : dissolve.add_row(regions, first_handle, last)) {
        ASSERT_FALSE(group.empty());
        EXPECT_TRUE(std::is_sorted(group.begin(), group.end()));
        for (const auto handle : group) {
          EXPECT_TRUE(given_back.insert(handle).second) << "handle " << handle << " given back twice";
          const auto [core_index, label] = place_of_handle.at(handle);
          const auto& [core, labels] = all_cores[core_index];
          for (int y = 0; y < core.height; ++y) {
            for (int x = 0; x < core.width; ++x) {
              if (labels[static_cast<std::size_t>(y) * core.width + x] != label) continue;
              group_of[static_cast<std::size_t>(core.y + y) * width + core.x + x] =
                  static_cast<std::int64_t>(group.front());
            }
          }
        }
      }
      if (last) {
        EXPECT_EQ(dissolve.held(), 0U);
      }
    }
    EXPECT_EQ(given_back.size(), next_handle) << "trial " << trial;
    // The same partition of the pixels: each whole region is one group, each group one region.
    std::map<std::int32_t, std::int64_t> group_of_region;
    std::map<std::int64_t, std::int32_t> region_of_group;
    for (std::size_t p = 0; p < classes.size(); ++p) {
      const auto label = whole.labels[p];
      ASSERT_EQ(label == 0, group_of[p] < 0) << "pixel " << p << " trial " << trial;
      if (label == 0) continue;
      const auto [g, new_region] = group_of_region.try_emplace(label, group_of[p]);
      ASSERT_EQ(g->second, group_of[p]) << "a region split, trial " << trial;
      const auto [r, new_group] = region_of_group.try_emplace(group_of[p], label);
      ASSERT_EQ(r->second, label) << "two regions joined, trial " << trial;
    }
    EXPECT_EQ(group_of_region.size(), whole.regions.size());
  }
}

TEST(RegionDissolve, AGroupWaitsOnlyWhileItsLastRowIsOpenBelow) {
  using Run = mgpr::runtime::SeamRun;
  using Side = Run::Side;
  RegionDissolve dissolve;
  // Row 0, two tiles split at x = 10, bottom line y = 10. A (tile 0) crosses into B
  // (tile 1) and B goes on below; C (tile 1, another class) touches B's run but is not
  // B's class; D stays inside tile 0.
  const std::vector<Run> a{{Side::kRight, 10, 2, 5}};
  const std::vector<Run> b{{Side::kLeft, 10, 3, 4}, {Side::kBottom, 10, 12, 15}};
  const std::vector<Run> c{{Side::kLeft, 10, 4, 6}};
  const std::vector<RegionDissolve::Region> row0{{1, a}, {1, {}}, {1, b}, {2, c}};
  const auto final0 = dissolve.add_row(row0, 0, false);
  const std::vector<std::vector<std::size_t>> expected0{{1}, {3}};
  EXPECT_EQ(final0, expected0);
  EXPECT_EQ(dissolve.held(), 2U);  // A and B, one group
  // Row 1: E continues B; F's run only touches B's at a corner (x = 15), so it is apart.
  const std::vector<Run> e{{Side::kTop, 10, 14, 15}};
  const std::vector<Run> f{{Side::kTop, 10, 15, 18}};
  const std::vector<RegionDissolve::Region> row1{{1, e}, {1, f}};
  const auto final1 = dissolve.add_row(row1, 4, true);
  const std::vector<std::vector<std::size_t>> expected1{{0, 2, 4}, {5}};
  EXPECT_EQ(final1, expected1);
  EXPECT_EQ(dissolve.held(), 0U);
}

}  // namespace
