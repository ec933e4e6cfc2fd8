#pragma once
// Internal to the GDAL source: how each raster is read, decided once at start-up and
// then shared read-only by every reader thread, and the per-thread reader itself.
#include <gdal_priv.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

// value = raw * gain + offset, i.e. (raw * scale - mean) / std folded once.
struct BandConversion {
  float gain = 1.0F;
  float offset = 0.0F;
  // The value that marks this band missing under MissingPixels::kNodataInAllBands (the
  // raster's own, or nodata=VALUE); unset otherwise.
  std::optional<double> nodata;
};

// Which pixels are missing, besides NaN in a floating-point band, which always is (a
// model can never be fed NaN). Decided once per raster from nodata= and, under the
// raster's own rule, the mask flags of its first selected band.
enum class MissingPixels {
  kNone,              // no other pixel (nodata=none, or GMF_ALL_VALID)
  kNodataInAllBands,  // every selected band holds its BandConversion::nodata at once
  kMaskBand,          // GDAL's mask band of the first selected band reads 0 (an
                      // internal or .msk mask, an alpha band, NODATA_VALUES)
};

// How a raster read at the model's ground resolution is read: each window of the model
// grid from the matching, fractional window of the raster's own grid, resampled by GDAL
// on read (docs/runtime.md, "Ground resolution").
struct ResampledRead {
  int native_width = 0;  // the raster's own pixels
  int native_height = 0;
  double x_ratio = 1;  // raster pixels per model pixel, along a row and down a column
  double y_ratio = 1;
  GDALRIOResampleAlg data = GRIORA_Average;  // for the bands
};

struct RasterReadPlan {
  std::string path;
  int width = 0;  // the grid tiles are cut from: the model's when resampled
  int height = 0;
  std::optional<ResampledRead> resampled;
  std::vector<int> band_map;  // 1-based, as RasterIO takes them
  // Native for Byte/UInt16/Int16/Float32, Float64 for the other real types (exact for
  // 32-bit integers, which float32 is not).
  GDALDataType buffer_type = GDT_Byte;
  std::vector<BandConversion> bands;  // one per entry of band_map
  MissingPixels missing = MissingPixels::kNone;
  // A pixel can be invalid (nodata in every band, the mask band's 0, or NaN in a
  // floating-point raster), so the valid mask must be computed; otherwise it stays empty
  // (all valid) unless padded.
  bool may_have_invalid_pixels = false;
};

// Whether a raw pixel read into `buffer_type` can equal `value`: 300 is no Byte value,
// 0.5 no integer's, and NaN equals nothing (NaN pixels are missing anyway). A nodata
// value it cannot hold marks no pixel.
bool buffer_can_hold(GDALDataType buffer_type, double value);

// The scaling of raw samples when every plan reads one integer type of 8 or 16 bits
// (Byte, UInt16, Int16) and scales each band alike (then tiles can travel raw); nullopt
// otherwise.
std::optional<RawScaling> common_raw_scaling(std::span<const RasterReadPlan> plans);

// GDALOpenEx read-only with verbose errors, without the shared-handle cache, so every
// caller gets a handle of its own. nullptr on failure, reason in CPLGetLastErrorMsg().
GDALDatasetUniquePtr open_raster_dataset(const std::string& path);

// Each reader thread keeps at most this many rasters open: a run over thousands of
// rasters must not hold a file (or an HTTP connection) per raster per thread. Tiles come
// in id order, raster after raster, so a few handles suffice.
inline constexpr std::size_t kOpenRastersPerReader = 16;

// Reads tiles of the planned rasters. Opens its own handle per raster on first use:
// GDAL handles must not be shared between threads. The plans must outlive the reader.
class RasterReader final : public TileReader {
 public:
  // `raw`: every plan reads the type common_raw_scaling found, and tiles keep their
  // samples raw (TileData::bytes).
  RasterReader(std::span<const RasterReadPlan> plans, int tile_size, bool raw = false);
  void read(const Tile& tile, TileData& out) override;
  // Closes this reader's handle of raster `image`, if open; the next read reopens it
  // (source/read_retry.hpp, after a failed read of a remote raster).
  void close(int image);

 private:
  GDALDataset& dataset(int image);

  std::span<const RasterReadPlan> plans_;
  int tile_size_;
  bool raw_;
  struct OpenRaster {
    int image = -1;
    GDALDatasetUniquePtr handle;
  };
  std::vector<OpenRaster> open_;    // most recently used last, at most kOpenRastersPerReader
  std::vector<std::byte> window_;   // native-type pixels of the last window, reused
  std::vector<std::uint8_t> mask_;  // the mask band over the last window (kMaskBand), reused
};

}  // namespace mgpr::runtime
