#include "source/raster_reader.hpp"

#include "gdal/remote_reads.hpp"
#include "source/read_error.hpp"

#include <cpl_error.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace mgpr::runtime {
namespace {

// The nodata value as the raw type holds it, or nullopt when no raw value can equal it
// (300 in a Byte band, 0.5 in an integer band): then no pixel is taken for nodata.
template <typename Raw>
std::optional<Raw> native_nodata(const std::optional<double>& nodata) {
  if (!nodata || std::isnan(*nodata)) return std::nullopt;  // NaN pixels are invalid anyway
  const double value = *nodata;
  if constexpr (std::is_integral_v<Raw>) {
    if (value != std::floor(value) || value < static_cast<double>(std::numeric_limits<Raw>::lowest()) ||
        value > static_cast<double>(std::numeric_limits<Raw>::max())) {
      return std::nullopt;
    }
  } else {
    if (std::isfinite(value) && std::abs(value) > static_cast<double>(std::numeric_limits<Raw>::max())) {
      return std::nullopt;
    }
  }
  return static_cast<Raw>(value);
}

// Band-sequential window (as RasterIO wrote it) to float CHW at the top-left of a
// tile_size x tile_size tile.
template <typename Raw>
void convert_pixels(const Raw* raw, const RasterReadPlan& plan, const PixelWindow& window, int tile_size,
                    TileData& out) {
  // Float64 buffers hold 32-bit integers exactly; keep that precision until the end.
  using Compute = std::conditional_t<(sizeof(Raw) > 4), double, float>;
  const auto plane = static_cast<std::size_t>(tile_size) * static_cast<std::size_t>(tile_size);
  const auto window_plane = static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height);
  for (std::size_t b = 0; b < plan.bands.size(); ++b) {
    const auto gain = static_cast<Compute>(plan.bands[b].gain);
    const auto offset = static_cast<Compute>(plan.bands[b].offset);
    for (int y = 0; y < window.height; ++y) {
      const Raw* source = raw + b * window_plane + static_cast<std::size_t>(y) * window.width;
      float* target = out.pixels.data() + b * plane + static_cast<std::size_t>(y) * tile_size;
      for (int x = 0; x < window.width; ++x) {
        target[x] = static_cast<float>(static_cast<Compute>(source[x]) * gain + offset);
      }
    }
  }
}

// Clears `valid` where a pixel of the window is missing under the plan's rule: the mask
// band reads 0 (`mask`, window-sized, kMaskBand only), or every selected band holds its
// nodata value (kNodataInAllBands; one saturated channel of an RGB photograph is data),
// or, whatever the rule, any band is NaN: a model can never be fed NaN.
template <typename Raw>
void mark_missing(const Raw* raw, const RasterReadPlan& plan, const PixelWindow& window, int tile_size,
                  const std::uint8_t* mask, std::uint8_t* valid) {
  const auto window_plane = static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height);
  const std::size_t band_count = plan.bands.size();
  std::vector<Raw> nodata;  // one per band when every band has a value a raw pixel can equal
  if (plan.missing == MissingPixels::kNodataInAllBands) {
    for (const auto& band : plan.bands) {
      const auto value = native_nodata<Raw>(band.nodata);
      if (!value) {  // this band is never nodata, so no pixel is nodata in every band
        nodata.clear();
        break;
      }
      nodata.push_back(*value);
    }
  }
  for (int y = 0; y < window.height; ++y) {
    const auto window_row = static_cast<std::size_t>(y) * window.width;
    std::uint8_t* valid_row = valid + static_cast<std::size_t>(y) * tile_size;
    for (int x = 0; x < window.width; ++x) {
      const auto at = window_row + static_cast<std::size_t>(x);
      bool missing = mask != nullptr && mask[at] == 0;
      if (!missing && !nodata.empty()) {
        missing = true;
        for (std::size_t b = 0; missing && b < band_count; ++b) missing = raw[b * window_plane + at] == nodata[b];
      }
      if constexpr (std::is_floating_point_v<Raw>) {
        for (std::size_t b = 0; !missing && b < band_count; ++b) missing = std::isnan(raw[b * window_plane + at]);
      }
      if (missing) valid_row[x] = 0;
    }
  }
}

// Converts the window and, when `valid` is tracked, marks the missing pixels and zeroes
// them in every channel.
template <typename Raw>
void convert_window(const Raw* raw, const RasterReadPlan& plan, const PixelWindow& window, int tile_size,
                    const std::uint8_t* mask, TileData& out) {
  convert_pixels(raw, plan, window, tile_size, out);
  if (out.valid.empty()) return;
  std::uint8_t* const valid = out.valid.data();
  mark_missing(raw, plan, window, tile_size, mask, valid);
  const auto plane = static_cast<std::size_t>(tile_size) * static_cast<std::size_t>(tile_size);
  for (int y = 0; y < window.height; ++y) {
    const auto row_offset = static_cast<std::size_t>(y) * tile_size;
    for (int x = 0; x < window.width; ++x) {
      if (valid[row_offset + x] != 0) continue;
      for (std::size_t b = 0; b < plan.bands.size(); ++b) out.pixels[b * plane + row_offset + x] = 0.0F;
    }
  }
}

// Sizes `out` for the tile; zero padding and a zero mask outside the window only when
// the window is smaller than the tile, so a full tile is written once, not twice.
void prepare_tile(const Tile& tile, const RasterReadPlan& plan, int tile_size, std::optional<RawSample> raw,
                  TileData& out) {
  const auto& window = tile.window;
  const bool padded = window.width < tile_size || window.height < tile_size;
  const auto plane = static_cast<std::size_t>(tile_size) * static_cast<std::size_t>(tile_size);
  out.tile = tile;
  out.channels = static_cast<int>(plan.band_map.size());
  out.height = tile_size;
  out.width = tile_size;
  const auto samples = plane * plan.band_map.size();
  if (raw) {
    out.pixels.clear();
    out.raw_sample = *raw;
    if (padded) {
      out.bytes.assign(samples * raw_sample_size(*raw), 0);
    } else {
      out.bytes.resize(samples * raw_sample_size(*raw));
    }
  } else {
    out.bytes.clear();
    if (padded) {
      out.pixels.assign(samples, 0.0F);
    } else {
      out.pixels.resize(samples);
    }
  }
  if (padded) {
    out.valid.assign(plane, 0);
    for (int y = 0; y < window.height; ++y) {
      std::fill_n(out.valid.begin() + static_cast<std::ptrdiff_t>(y) * tile_size, window.width, std::uint8_t{1});
    }
  } else if (plan.may_have_invalid_pixels) {
    out.valid.assign(plane, 1);
  } else {
    out.valid.clear();
  }
}

// The raster's pixels under `window` of the model grid: the fractional window (set in
// `extra`, so GDAL scales by exactly the planned ratio and places each model pixel as a
// read of the whole raster would), and the whole pixels that hold it, within the
// raster. The last model column or row may reach up to half a model pixel past the
// raster's edge (the model grid's size is rounded): GDAL's kernels stop at the pixels
// read, so it takes the part inside.
PixelWindow resampled_window(const ResampledRead& read, const PixelWindow& window, GDALRasterIOExtraArg& extra) {
  constexpr double kSlack = 1e-9;  // products of ratios that should be whole
  extra.bFloatingPointWindowValidity = TRUE;
  extra.dfXOff = window.x * read.x_ratio;
  extra.dfYOff = window.y * read.y_ratio;
  extra.dfXSize = window.width * read.x_ratio;
  extra.dfYSize = window.height * read.y_ratio;
  const auto whole = [](double start, double size, int limit, int& from, int& count) {
    from = std::clamp(static_cast<int>(std::floor(start + kSlack)), 0, limit - 1);
    const int end = std::clamp(static_cast<int>(std::ceil(start + size - kSlack)), from + 1, limit);
    count = end - from;
  };
  PixelWindow from;
  whole(extra.dfXOff, extra.dfXSize, read.native_width, from.x, from.width);
  whole(extra.dfYOff, extra.dfYSize, read.native_height, from.y, from.height);
  return from;
}

// The raw path: the window's samples as read, at the top-left of the tile, and the
// missing pixels marked in `valid` for the device to zero once scaled.
template <typename Raw>
void copy_raw_window(const Raw* raw, const RasterReadPlan& plan, const PixelWindow& window, int tile_size,
                     const std::uint8_t* mask, TileData& out) {
  // std::vector's storage is aligned for any fundamental type.
  auto* const samples = reinterpret_cast<Raw*>(out.bytes.data());
  const auto plane = static_cast<std::size_t>(tile_size) * static_cast<std::size_t>(tile_size);
  const auto window_plane = static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height);
  for (std::size_t b = 0; b < plan.bands.size(); ++b) {
    for (int y = 0; y < window.height; ++y) {
      std::copy_n(raw + b * window_plane + static_cast<std::size_t>(y) * window.width, window.width,
                  samples + b * plane + static_cast<std::size_t>(y) * tile_size);
    }
  }
  if (!out.valid.empty()) mark_missing(raw, plan, window, tile_size, mask, out.valid.data());
}

// Calls `use` with `samples` typed as a plan's buffer type (`samples` may be null, for
// the type alone).
template <typename Use>
decltype(auto) with_buffer_type(GDALDataType buffer_type, const std::byte* samples, Use&& use) {
  switch (buffer_type) {
    case GDT_Byte:
      return use(reinterpret_cast<const std::uint8_t*>(samples));
    case GDT_UInt16:
      return use(reinterpret_cast<const std::uint16_t*>(samples));
    case GDT_Int16:
      return use(reinterpret_cast<const std::int16_t*>(samples));
    case GDT_Float32:
      return use(reinterpret_cast<const float*>(samples));
    case GDT_Float64:
      return use(reinterpret_cast<const double*>(samples));
    default:
      throw std::logic_error("raster read plan with an unplanned buffer type");
  }
}

// The raw sample type of a plan's buffer; nullopt for a type that stays float.
std::optional<RawSample> raw_sample_of(GDALDataType buffer_type) {
  switch (buffer_type) {
    case GDT_Byte:
      return RawSample::kUInt8;
    case GDT_UInt16:
      return RawSample::kUInt16;
    case GDT_Int16:
      return RawSample::kInt16;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<RawScaling> common_raw_scaling(std::span<const RasterReadPlan> plans) {
  if (plans.empty()) return std::nullopt;
  RawScaling scaling;
  for (const auto& band : plans.front().bands) {
    scaling.gain.push_back(band.gain);
    scaling.offset.push_back(band.offset);
  }
  const auto sample = raw_sample_of(plans.front().buffer_type);
  if (!sample) return std::nullopt;
  scaling.sample = *sample;
  for (const auto& plan : plans) {
    if (plan.buffer_type != plans.front().buffer_type || plan.bands.size() != scaling.gain.size()) return std::nullopt;
    for (std::size_t b = 0; b < plan.bands.size(); ++b) {
      if (plan.bands[b].gain != scaling.gain[b] || plan.bands[b].offset != scaling.offset[b]) return std::nullopt;
    }
  }
  return scaling;
}

bool buffer_can_hold(GDALDataType buffer_type, double value) {
  return with_buffer_type(buffer_type, nullptr, [value](const auto* typed) {
    return native_nodata<std::remove_cvref_t<decltype(*typed)>>(value).has_value();
  });
}

GDALDatasetUniquePtr open_raster_dataset(const std::string& path) {
  const OpenWithoutListing no_listing(path);
  return GDALDatasetUniquePtr(GDALDataset::FromHandle(
      GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR, nullptr, nullptr, nullptr)));
}

RasterReader::RasterReader(std::span<const RasterReadPlan> plans, int tile_size, bool raw)
    : plans_(plans), tile_size_(tile_size), raw_(raw) {
  if (raw && !common_raw_scaling(plans))
    throw std::logic_error("raw tiles planned for rasters of mixed or float types");
}

void RasterReader::close(int image) {
  std::erase_if(open_, [image](const auto& open) { return open.image == image; });
}

GDALDataset& RasterReader::dataset(int image) {
  const auto found = std::find_if(open_.begin(), open_.end(), [&](const auto& open) { return open.image == image; });
  if (found != open_.end()) {
    std::rotate(found, found + 1, open_.end());  // now the most recently used
    return *open_.back().handle;
  }
  const auto& path = plans_[static_cast<std::size_t>(image)].path;
  auto handle = open_raster_dataset(path);
  if (!handle) {
    throw RasterReadError(
        fmt::format("raster '{}' could not be reopened by a reader thread: {}", path, CPLGetLastErrorMsg()));
  }
  if (open_.size() >= kOpenRastersPerReader) open_.erase(open_.begin());  // the least recently used
  open_.push_back({image, std::move(handle)});
  return *open_.back().handle;
}

void RasterReader::read(const Tile& tile, TileData& out) {
  const auto start = std::chrono::steady_clock::now();
  if (tile.id.image < 0 || static_cast<std::size_t>(tile.id.image) >= plans_.size()) {
    throw std::runtime_error(
        fmt::format("tile of image {} requested, but the run has {} raster(s)", tile.id.image, plans_.size()));
  }
  const auto& plan = plans_[static_cast<std::size_t>(tile.id.image)];
  const auto& window = tile.window;
  if (window.x < 0 || window.y < 0 || window.width < 1 || window.height < 1 || window.width > tile_size_ ||
      window.height > tile_size_ || window.x + window.width > plan.width || window.y + window.height > plan.height) {
    throw std::runtime_error(fmt::format("window x={} y={} {}x{} does not fit raster '{}' ({}x{}) in {}-pixel tiles",
                                         window.x, window.y, window.width, window.height, plan.path, plan.width,
                                         plan.height, tile_size_));
  }

  const auto band_count = plan.band_map.size();
  window_.resize(static_cast<std::size_t>(GDALGetDataTypeSizeBytes(plan.buffer_type)) *
                 static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height) * band_count);
  auto& source = dataset(tile.id.image);
  // The window read from the raster: the tile's own, or its footprint on the raster's
  // grid, resampled by GDAL into the tile's pixels (ground_resolution_read).
  GDALRasterIOExtraArg extra;
  INIT_RASTERIO_EXTRA_ARG(extra);
  PixelWindow from = window;
  std::string resampled_from;  // for messages: the raster's window when it differs
  if (plan.resampled) {
    from = resampled_window(*plan.resampled, window, extra);
    resampled_from = fmt::format(" (raster pixels x={} y={} {}x{})", from.x, from.y, from.width, from.height);
  }
  CPLErrorReset();
  // One call for all bands: a pixel-interleaved GeoTIFF then decodes each block once.
  // GDAL 3.6 takes the band map as int*; it does not write to it.
  extra.eResampleAlg = plan.resampled ? plan.resampled->data : GRIORA_NearestNeighbour;
  if (source.RasterIO(GF_Read, from.x, from.y, from.width, from.height, window_.data(), window.width, window.height,
                      plan.buffer_type, static_cast<int>(band_count), const_cast<int*>(plan.band_map.data()), 0, 0, 0,
                      &extra) != CE_None) {
    throw RasterReadError(fmt::format(
        "reading raster '{}' window x={} y={} {}x{}{} failed: {}; the file may be truncated or "
        "corrupt: check it with `gdalinfo -checksum {}`",
        plan.path, window.x, window.y, window.width, window.height, resampled_from, CPLGetLastErrorMsg(), plan.path));
  }

  const std::uint8_t* mask = nullptr;
  if (plan.missing == MissingPixels::kMaskBand) {
    mask_.resize(static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height));
    auto* mask_band = source.GetRasterBand(plan.band_map.front())->GetMaskBand();
    // Resampled, the mask is averaged whatever the bands' method: a model pixel is then
    // missing exactly when every raster pixel it covers is (mean 0). GDAL's resampling
    // of the bands leaves masked pixels out of each model pixel's value, so a pixel kept
    // holds its valid pixels' value, and none is made of missing ones alone.
    extra.eResampleAlg = GRIORA_Average;
    if (mask_band->RasterIO(GF_Read, from.x, from.y, from.width, from.height, mask_.data(), window.width, window.height,
                            GDT_Byte, 0, 0, &extra) != CE_None) {
      throw RasterReadError(fmt::format(
          "reading the mask of raster '{}' window x={} y={} {}x{}{} failed: {}; the file or its mask "
          "may be truncated or corrupt: check it with `gdalinfo -checksum {}`",
          plan.path, window.x, window.y, window.width, window.height, resampled_from, CPLGetLastErrorMsg(), plan.path));
    }
    mask = mask_.data();
  }

  const auto* raw = window_.data();
  prepare_tile(tile, plan, tile_size_, raw_ ? raw_sample_of(plan.buffer_type) : std::nullopt, out);
  with_buffer_type(plan.buffer_type, raw, [&](const auto* samples) {
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(*samples)>>) {
      if (raw_) return copy_raw_window(samples, plan, window, tile_size_, mask, out);
    } else {
      if (raw_) throw std::logic_error("raw tiles planned for a raster read as floating point");
    }
    convert_window(samples, plan, window, tile_size_, mask, out);
  });
  out.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace mgpr::runtime
