#include "source/raster_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

#include "mgpr/input_list.hpp"

namespace mgpr::runtime {
namespace {

// Up to this many rasters the banner has a line for each.
constexpr std::size_t kRasterLinesUpTo = 8;

void print_raster_summary(const std::vector<RasterDescription>& rasters) {
  std::int64_t pixels = 0;
  std::set<std::string> crss;
  std::set<std::string> types;
  for (const auto& raster : rasters) {
    pixels += static_cast<std::int64_t>(raster.width) * raster.height;
    crss.insert(raster.crs_wkt);
    types.insert(fmt::format("{} x{}", raster.data_type, raster.bands.size()));
  }
  fmt::print("#   {} rasters, {:.1f} Mpx, from {} to {}; {} CRS{}, bands: {}\n", rasters.size(),
             static_cast<double>(pixels) / 1e6, redact_input(rasters.front().path), redact_input(rasters.back().path),
             crss.size(), crss.size() == 1 ? "" : "s", fmt::join(types, ", "));
}

// Thousands of rasters: how many are read resampled to the model's gsd, in one line.
void print_resolution_summary(const std::vector<RasterDescription>& rasters) {
  const auto resampled =
      std::count_if(rasters.begin(), rasters.end(), [](const auto& raster) { return raster.native_grid.has_value(); });
  if (resampled > 0) {
    fmt::print("#   {} of {} rasters read resampled to the model's ground resolution, e.g. {}: {}\n", resampled,
               rasters.size(), redact_input(rasters.front().path), rasters.front().resolution_note);
  }
}

// Rasters read at a resolution other than the model's, or that cannot be compared with
// it: on stderr, where warnings go, a line each for the first few.
void print_resolution_warnings(const std::vector<RasterDescription>& rasters) {
  std::size_t warned = 0;
  for (const auto& raster : rasters) {
    if (!raster.resolution_warning) continue;
    if (++warned <= kRasterLinesUpTo) {
      fmt::print(stderr, "mgpr: warning: raster {}: resolution {}\n", redact_input(raster.path),
                 raster.resolution_note);
    }
  }
  if (warned > kRasterLinesUpTo) {
    fmt::print(stderr, "mgpr: warning: {} more rasters like these ({} in all)\n", warned - kRasterLinesUpTo, warned);
  }
}

}  // namespace

void print_rasters(const std::vector<RasterDescription>& rasters) {
  // A line per raster while they can be read; thousands get one summary line.
  if (rasters.size() <= kRasterLinesUpTo) {
    for (const auto& raster : rasters) {
      fmt::print("#   raster {}: {}x{} px, {} bands ({}), using bands {}, CRS {}, missing pixels: {}\n",
                 redact_input(raster.path), raster.width, raster.height, raster.band_count, raster.data_type,
                 fmt::join(raster.bands, ","), raster.crs_wkt.empty() ? "none" : "set", raster.missing_pixels);
      if (!raster.resolution_note.empty()) fmt::print("#     resolution {}\n", raster.resolution_note);
    }
  } else {
    print_raster_summary(rasters);
    print_resolution_summary(rasters);
  }
  print_resolution_warnings(rasters);
}

}  // namespace mgpr::runtime
