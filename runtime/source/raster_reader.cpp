#include "source/raster_reader.hpp"

#include <cpl_error.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
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

template <typename Raw>
bool is_invalid(Raw value, const std::optional<Raw>& nodata) {
  if constexpr (std::is_floating_point_v<Raw>) {
    if (std::isnan(value)) return true;
  }
  return nodata && value == *nodata;
}

// Band-sequential window (as RasterIO wrote it) to float CHW at the top-left of a
// tile_size x tile_size tile. Marks invalid pixels in `valid` when it is tracked.
template <typename Raw>
void convert_window(const Raw* raw, const RasterReadPlan& plan, const PixelWindow& window, int tile_size,
                    TileData& out) {
  // Float64 buffers hold 32-bit integers exactly; keep that precision until the end.
  using Compute = std::conditional_t<(sizeof(Raw) > 4), double, float>;
  const auto plane = static_cast<std::size_t>(tile_size) * static_cast<std::size_t>(tile_size);
  const auto window_plane = static_cast<std::size_t>(window.width) * static_cast<std::size_t>(window.height);
  std::uint8_t* const valid = out.valid.empty() ? nullptr : out.valid.data();
  for (std::size_t b = 0; b < plan.bands.size(); ++b) {
    const auto& band = plan.bands[b];
    const auto gain = static_cast<Compute>(band.gain);
    const auto offset = static_cast<Compute>(band.offset);
    const auto nodata = native_nodata<Raw>(band.nodata);
    for (int y = 0; y < window.height; ++y) {
      const Raw* source = raw + b * window_plane + static_cast<std::size_t>(y) * window.width;
      const auto row_offset = static_cast<std::size_t>(y) * tile_size;
      float* target = out.pixels.data() + b * plane + row_offset;
      for (int x = 0; x < window.width; ++x) {
        target[x] = static_cast<float>(static_cast<Compute>(source[x]) * gain + offset);
      }
      if (valid == nullptr) continue;
      std::uint8_t* valid_row = valid + row_offset;
      for (int x = 0; x < window.width; ++x) {
        if (is_invalid(source[x], nodata)) valid_row[x] = 0;
      }
    }
  }
  if (valid == nullptr) return;
  // A pixel missing in one band is missing for the model: zero it in every channel.
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
void prepare_tile(const Tile& tile, const RasterReadPlan& plan, int tile_size, TileData& out) {
  const auto& window = tile.window;
  const bool padded = window.width < tile_size || window.height < tile_size;
  const auto plane = static_cast<std::size_t>(tile_size) * static_cast<std::size_t>(tile_size);
  out.tile = tile;
  out.channels = static_cast<int>(plan.band_map.size());
  out.height = tile_size;
  out.width = tile_size;
  if (padded) {
    out.pixels.assign(plane * plan.band_map.size(), 0.0F);
  } else {
    out.pixels.resize(plane * plan.band_map.size());
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

}  // namespace

GDALDatasetUniquePtr open_raster_dataset(const std::string& path) {
  return GDALDatasetUniquePtr(GDALDataset::FromHandle(
      GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR, nullptr, nullptr, nullptr)));
}

RasterReader::RasterReader(std::span<const RasterReadPlan> plans, int tile_size)
    : plans_(plans), tile_size_(tile_size) {}

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
    throw std::runtime_error(
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
  CPLErrorReset();
  // One call for all bands: a pixel-interleaved GeoTIFF then decodes each block once.
  // GDAL 3.6 takes the band map as int*; it does not write to it.
  if (source.RasterIO(GF_Read, window.x, window.y, window.width, window.height, window_.data(), window.width,
                      window.height, plan.buffer_type, static_cast<int>(band_count),
                      const_cast<int*>(plan.band_map.data()), 0, 0, 0, nullptr) != CE_None) {
    throw std::runtime_error(
        fmt::format("reading raster '{}' window x={} y={} {}x{} failed: {}; the file may be truncated or "
                    "corrupt: check it with `gdalinfo -checksum {}`",
                    plan.path, window.x, window.y, window.width, window.height, CPLGetLastErrorMsg(), plan.path));
  }

  prepare_tile(tile, plan, tile_size_, out);
  const auto* raw = window_.data();
  switch (plan.buffer_type) {
    case GDT_Byte:
      convert_window(reinterpret_cast<const std::uint8_t*>(raw), plan, window, tile_size_, out);
      break;
    case GDT_UInt16:
      convert_window(reinterpret_cast<const std::uint16_t*>(raw), plan, window, tile_size_, out);
      break;
    case GDT_Int16:
      convert_window(reinterpret_cast<const std::int16_t*>(raw), plan, window, tile_size_, out);
      break;
    case GDT_Float32:
      convert_window(reinterpret_cast<const float*>(raw), plan, window, tile_size_, out);
      break;
    case GDT_Float64:
      convert_window(reinterpret_cast<const double*>(raw), plan, window, tile_size_, out);
      break;
    default:
      throw std::logic_error("raster read plan with an unplanned buffer type");
  }
  out.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace mgpr::runtime
