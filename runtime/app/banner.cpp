#include "app/banner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>

#include "mgpr/input_list.hpp"
#include "mgpr/process.hpp"
#include "mgpr/version.hpp"

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

void print_banner(const RankEnvironment& ranks, const RunPlan& plan, const BannerFacts& facts) {
  const auto& device = plan.device;
  fmt::print("# mgpr {} | rank {:>3}/{} | local {} | host {} | device {} | threads {} | libtorch {} | gdal {}\n",
             kVersion, ranks.rank, ranks.world_size, ranks.local_rank, host_name(""), device.name,
             facts.backend.threads, facts.backend.torch_version, facts.backend.gdal_version);
  if (ranks.rank == 0) {
    const auto& rasters = facts.source.rasters();
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
    fmt::print("#   {} tiles of {} px, model {}\n", facts.source.tiles().size(), facts.source.tile_size(),
               facts.model.description());
    if (!plan.model_card.empty()) fmt::print("#   model card: {}\n", plan.model_card);
    if (const auto& crops = plan.crop_classifier) {
      fmt::print("#   every box classified by {}: crops of {} px{} in batches of {}, {}\n", crops->model.model,
                 crops->model.tile_size, crops->margin > 0 ? fmt::format(" with a margin of {} px", crops->margin) : "",
                 crops->batch_size,
                 crops->class_names.empty() ? "classes unnamed"
                                            : fmt::format("classes {}", fmt::join(crops->class_names, ", ")));
    }
  }
  std::fflush(stdout);
}

void print_dropped_results(const RunJournal::DoneTiles& done, std::span<const std::string> rasters,
                           const std::filesystem::path& journal_folder) {
  if (!done.changed_rasters.empty()) {
    const auto& example = rasters[static_cast<std::size_t>(done.changed_rasters.front())];
    fmt::print(stderr, "mgpr: {} raster(s) changed since the interrupted run (e.g. {}); their tiles are done again\n",
               done.changed_rasters.size(), redact_input(example));
  }
  if (done.foreign > 0) {
    fmt::print(stderr,
               "mgpr: warning: {} result(s) in the journal {} are for tiles these inputs do not have; they are "
               "ignored and those tiles computed again\n",
               done.foreign, journal_folder.string());
  }
}

void print_run_end(const RunEnd& end, const std::filesystem::path& journal_folder) {
  if (!end.failed.empty()) {
    fmt::print("# {} of {} rasters could not be read; the results of the others are written:\n", end.failed.size(),
               end.source.rasters().size());
    for (const auto& [image, reason] : end.failed) {
      fmt::print("#   {}: {}\n", redact_input(end.source.rasters().at(static_cast<std::size_t>(image)).path), reason);
    }
    fmt::print(
        "# their finished tiles are kept in {}: fix or replace those rasters (same paths) and run the same "
        "command again to do only what is missing\n",
        journal_folder.string());
  }
  if (end.stopped) {
    fmt::print(
        "# stopped: {} of {} tiles are finished and kept in {}; run the same command again (a requeued "
        "job does so) to finish the rest\n",
        end.tiles_done, end.source.tiles().size(), journal_folder.string());
  }
  std::fflush(stdout);
}

}  // namespace mgpr::runtime
