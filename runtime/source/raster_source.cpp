#include "source/raster_source.hpp"

#include <cpl_conv.h>
#include <cpl_error.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ogr_spatialref.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "gdal/gdal_errors.hpp"
#include "gdal/remote_reads.hpp"
#include "mgpr/error.hpp"
#include "mgpr/tile_limits.hpp"
#include "source/crs_cache.hpp"
#include "source/ground_resolution.hpp"
#include "source/missing_pixels.hpp"
#include "source/raster_open.hpp"
#include "source/raster_reader.hpp"
#include "source/read_retry.hpp"

namespace mgpr::runtime {
namespace {

std::string plural(std::size_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// The default selection: the first min(3, band count) bands, less any alpha band (a
// gray+alpha raster feeds its gray band only; the alpha band says which pixels are
// missing instead), unless nothing else would be left.
std::vector<int> default_bands(GDALDataset& dataset, int band_count) {
  std::vector<int> defaults;
  for (int band = 1; band <= std::min(3, band_count); ++band) {
    if (dataset.GetRasterBand(band)->GetColorInterpretation() != GCI_AlphaBand) defaults.push_back(band);
  }
  if (defaults.empty()) defaults.push_back(1);
  return defaults;
}

std::vector<int> select_bands(const SourceOptions& options, const std::string& path, GDALDataset& dataset,
                              int band_count) {
  const auto defaults = default_bands(dataset, band_count);
  if (options.bands.empty()) return defaults;
  for (const int band : options.bands) {
    if (band < 1 || band > band_count) {
      throw UsageError(
          fmt::format("raster '{}' has {}, but bands={} asks for band {}; choose band numbers from 1 "
                      "to {} (e.g. bands={})",
                      path, plural(static_cast<std::size_t>(band_count), "band"), fmt::join(options.bands, ","), band,
                      band_count, fmt::join(defaults, ",")));
    }
  }
  return options.bands;
}

struct BufferChoice {
  GDALDataType buffer_type;
  double default_scale;  // what scale=0 means for this data type
};

std::optional<BufferChoice> choose_buffer(GDALDataType type) {
  switch (type) {
    case GDT_Byte:
      return BufferChoice{GDT_Byte, 1.0 / 255.0};
    case GDT_UInt16:
      return BufferChoice{GDT_UInt16, 1.0 / 65535.0};
    case GDT_Int16:
      return BufferChoice{GDT_Int16, 1.0 / 32767.0};
    case GDT_Float32:
      return BufferChoice{GDT_Float32, 1.0};
    default:
      if (type == GDT_Unknown || GDALDataTypeIsComplex(type) != 0) return std::nullopt;
      return BufferChoice{GDT_Float64, 1.0};
  }
}

// One value per selected band from a key given empty (fallback), once, or per band.
std::vector<double> per_band(const std::vector<double>& values, double fallback, std::string_view key,
                             const std::string& path, const std::vector<int>& bands) {
  if (auto expanded = values_per_band(values, bands.size(), fallback)) return *std::move(expanded);
  throw UsageError(
      fmt::format("{} has {} values but {} selected from raster '{}' (bands={}); give one value for "
                  "all bands or one per selected band",
                  key, values.size(), bands.size() == 1 ? "1 band is" : fmt::format("{} bands are", bands.size()), path,
                  fmt::join(bands, ",")));
}

struct OpenedRaster {
  RasterDescription description;
  RasterReadPlan plan;
};

// A GeoTIFF cut short still opens (its directory comes first); reading the last pixel
// of every selected band (and of the mask band the plan reads) reads the blocks usually
// written last, so most truncated copies fail here, by name, rather than in a reader
// thread mid-run. Done for runs of up to kProbeEndsUpTo rasters: with more, a raster
// that fails mid-run fails alone (source/reader_pool.hpp) and is named in the summary,
// while the probe would decode every raster's last block at start-up on every rank (1.5
// ms a raster with DEFLATE: 15 s for 10,000 tiles).
constexpr std::size_t kProbeEndsUpTo = 8;

void probe_last_pixel(GDALDataset& dataset, const RasterDescription& description, const RasterReadPlan& plan) {
  std::vector<double> corner(description.bands.size());
  std::uint8_t mask_corner = 0;
  CPLErrorReset();
  if (dataset.RasterIO(GF_Read, description.width - 1, description.height - 1, 1, 1, corner.data(), 1, 1, GDT_Float64,
                       static_cast<int>(corner.size()), const_cast<int*>(description.bands.data()), 0, 0, 0,
                       nullptr) != CE_None ||
      (plan.missing == MissingPixels::kMaskBand &&
       dataset.GetRasterBand(description.bands.front())
               ->GetMaskBand()
               ->RasterIO(GF_Read, description.width - 1, description.height - 1, 1, 1, &mask_corner, 1, 1, GDT_Byte, 0,
                          0, nullptr) != CE_None)) {
    throw UsageError(
        fmt::format("raster '{}' cannot be read to its end: {}; the file is truncated or corrupt: copy "
                    "it again and check it with `gdalinfo -checksum {}`",
                    description.path, CPLGetLastErrorMsg(), description.path));
  }
}

OpenedRaster open_and_plan(const std::string& path, const SourceOptions& options, bool probe_end, CrsCache& crs_cache) {
  // While opening at start-up GDAL's message goes into the UsageError, so it is not also
  // printed on its own without the fix.
  const GdalErrorScope quiet(GdalErrorScope::Warnings::kQuiet);
  const auto dataset = open_or_explain(path);
  OpenedRaster opened;
  auto& description = opened.description;
  description.path = path;
  description.width = dataset->GetRasterXSize();
  description.height = dataset->GetRasterYSize();
  description.band_count = dataset->GetRasterCount();
  if (description.band_count < 1 || description.width < 1 || description.height < 1) {
    throw UsageError(
        fmt::format("raster '{}' has no pixels to read ({}x{} pixels, {}); pass a raster with "
                    "image bands (`gdalinfo {}` lists them)",
                    path, description.width, description.height,
                    plural(static_cast<std::size_t>(description.band_count), "band"), path));
  }
  description.bands = select_bands(options, path, *dataset, description.band_count);

  const GDALDataType type = dataset->GetRasterBand(description.bands.front())->GetRasterDataType();
  description.data_type = GDALGetDataTypeName(type);
  for (const int band : description.bands) {
    const GDALDataType other = dataset->GetRasterBand(band)->GetRasterDataType();
    if (other != type) {
      throw UsageError(
          fmt::format("raster '{}' mixes data types in the selected bands ({} in band {}, {} in band "
                      "{}); select bands of one type, or convert with gdal_translate -ot Float32",
                      path, description.data_type, description.bands.front(), GDALGetDataTypeName(other), band));
    }
  }
  const auto buffer = choose_buffer(type);
  if (!buffer) {
    throw UsageError(
        fmt::format("raster '{}' has data type {}, which mgpr cannot read; supported: Byte, UInt16, "
                    "Int16, Float32 and the other real types; convert with gdal_translate -ot Float32",
                    path, description.data_type));
  }

  const double scale = options.scale != 0.0 ? options.scale : buffer->default_scale;
  const auto means = per_band(options.mean, 0.0, "mean", path, description.bands);
  const auto stds = per_band(options.std, 1.0, "std", path, description.bands);
  auto& plan = opened.plan;
  plan.path = path;
  plan.width = description.width;
  plan.height = description.height;
  plan.band_map = description.bands;
  plan.buffer_type = buffer->buffer_type;
  for (std::size_t i = 0; i < description.bands.size(); ++i) {
    if (!(stds[i] > 0.0)) {
      throw UsageError(fmt::format("std={} for band {} of raster '{}' must be positive: it divides the pixels", stds[i],
                                   description.bands[i], path));
    }
    plan.bands.push_back({static_cast<float>(scale / stds[i]), static_cast<float>(-means[i] / stds[i]), {}});
  }
  description.nodata = raster_nodata(*dataset, description.bands.front());
  plan_missing_pixels(*dataset, options.nodata, GDALDataTypeIsFloating(type) != 0, description, plan);
  if (probe_end) probe_last_pixel(*dataset, description, plan);

  std::array<double, 6> geotransform{};
  if (dataset->GetGeoTransform(geotransform.data()) == CE_None) {
    try {
      description.geotransform = GeoTransform(geotransform);
    } catch (const std::invalid_argument& why) {
      // Checked here, at start-up, not when the results are written hours later.
      throw UsageError(
          fmt::format("raster '{}' has a geotransform that maps no pixel to a place ({}: {}); fix its "
                      "georeferencing (`gdalinfo {}` shows it, gdal_edit.py -a_ullr sets it) or "
                      "remove it",
                      description.path, why.what(), fmt::join(geotransform, ", "), description.path));
    }
  }
  auto crs = crs_cache.crs_of(*dataset, path);
  description.crs_wkt = std::move(crs.wkt);
  description.crs_geographic = crs.units && crs.units->geographic;
  // After the probe, which reads the raster's own last pixel.
  plan.resampled = plan_ground_resolution(options.resolution, crs.units, description);
  plan.width = description.width;
  plan.height = description.height;
  return opened;
}

}  // namespace

namespace {

class RasterSource final : public TileSource {
 public:
  RasterSource(std::vector<RasterDescription> rasters, std::vector<RasterReadPlan> plans, std::vector<Tile> tiles,
               int channels, int tile_size, bool raw_samples)
      : rasters_(std::move(rasters)),
        plans_(std::move(plans)),
        tiles_(std::move(tiles)),
        channels_(channels),
        tile_size_(tile_size),
        raw_scaling_(raw_samples ? common_raw_scaling(plans_) : std::nullopt) {}

  [[nodiscard]] const std::vector<Tile>& tiles() const override { return tiles_; }
  [[nodiscard]] const std::vector<RasterDescription>& rasters() const override { return rasters_; }
  [[nodiscard]] int channels() const override { return channels_; }
  [[nodiscard]] int tile_size() const override { return tile_size_; }
  [[nodiscard]] std::unique_ptr<TileReader> open_reader() const override {
    return with_read_retries(std::make_unique<RasterReader>(plans_, tile_size_, raw_scaling_.has_value()), plans_);
  }
  [[nodiscard]] std::optional<RawScaling> raw_scaling() const override { return raw_scaling_; }

 private:
  const std::vector<RasterDescription> rasters_;
  const std::vector<RasterReadPlan> plans_;  // never resized: readers hold a span of it
  const std::vector<Tile> tiles_;
  const int channels_;
  const int tile_size_;
  const std::optional<RawScaling> raw_scaling_;  // set: tiles travel raw
};

}  // namespace

void initialise_gdal() {
  static std::once_flag once;
  std::call_once(once, [] {
    GDALAllRegister();
    configure_remote_reads();  // object-storage defaults the user did not set
    if (CPLGetConfigOption("GDAL_CACHEMAX", nullptr) == nullptr) GDALSetCacheMax64(kDefaultGdalCacheBytes);
  });
}

namespace {

// Opens and plans every raster on up to options.open_threads threads: a raster's CRS
// alone costs GDAL about 0.4 ms (lookups in PROJ's database), 4 s for 10,000 tiles on
// one thread, unless the rasters share their GeoTIFF keys (CrsCache). The first error in
// input order is thrown, as opening them in turn would.
std::vector<OpenedRaster> open_all(const SourceOptions& options) {
  const auto count = options.rasters.size();
  std::vector<std::optional<OpenedRaster>> opened(count);
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  CrsCache crs_cache;
  const auto work = [&] {
    for (auto i = next++; i < count; i = next++) {
      try {
        opened[i] = open_and_plan(options.rasters[i], options, count <= kProbeEndsUpTo, crs_cache);
      } catch (...) {
        errors[i] = std::current_exception();
        next = count;  // the run fails: the others need not be opened
      }
    }
  };
  {
    const auto extra = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, options.open_threads)), count) - 1;
    std::vector<std::jthread> helpers;
    for (std::size_t t = 0; t < extra; ++t) helpers.emplace_back(work);
    work();
  }
  std::vector<OpenedRaster> all;
  all.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    if (!opened[i]) break;  // after an error another thread hit first
    all.push_back(std::move(*opened[i]));
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return all;
}

}  // namespace

std::unique_ptr<TileSource> make_raster_source(const SourceOptions& options) {
  initialise_gdal();
  if (options.rasters.empty()) {
    throw UsageError(
        "no raster given: pass RASTER paths (or image_path=...), or use_fake_data=true for a "
        "fake-data environment check");
  }
  // Before the first remote read, which sizes GDAL's block cache once.
  if (std::any_of(options.rasters.begin(), options.rasters.end(),
                  [](const std::string& raster) { return is_remote_path(raster); })) {
    size_remote_block_cache(options.readers);
  }
  std::vector<RasterDescription> rasters;
  std::vector<RasterReadPlan> plans;
  for (auto& opened : open_all(options)) {
    const auto& path = opened.description.path;
    if (!rasters.empty() && opened.description.bands.size() != rasters.front().bands.size()) {
      const auto& first = rasters.front();
      throw UsageError(fmt::format(
          "raster '{}' gives the model {} (bands={}) but '{}' gives {} (bands={}); one "
          "run feeds one channel count: set bands=... to select as many bands in each, "
          "or run the rasters separately",
          path, plural(opened.description.bands.size(), "channel"), fmt::join(opened.description.bands, ","),
          first.path, first.bands.size(), fmt::join(first.bands, ",")));
    }
    rasters.push_back(std::move(opened.description));
    plans.push_back(std::move(opened.plan));
  }
  const int channels = static_cast<int>(rasters.front().bands.size());
  check_tile_bytes(options.tile_size, options.overlap, channels);

  std::vector<Tile> tiles;
  for (std::size_t image = 0; image < rasters.size(); ++image) {
    const auto& raster = rasters[image];
    const auto image_tiles =
        tile_image(static_cast<int>(image), raster.width, raster.height, options.tile_size, options.overlap);
    tiles.insert(tiles.end(), image_tiles.begin(), image_tiles.end());
  }
  return std::make_unique<RasterSource>(std::move(rasters), std::move(plans), std::move(tiles), channels,
                                        options.tile_size, options.raw_samples);
}

}  // namespace mgpr::runtime
