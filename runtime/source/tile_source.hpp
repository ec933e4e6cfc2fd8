#pragma once
// Where tiles come from: GDAL rasters or the original project's fake data. A source is
// shared by the reader threads; each thread opens its own TileReader, because a GDAL
// dataset handle must not be used by two threads at once.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "geometry/georef.hpp"
#include "geometry/tiler.hpp"
#include "mgpr/run_choices.hpp"

namespace mgpr::runtime {

// The type of raw samples: the rasters' own, as read.
enum class RawSample { kUInt8, kUInt16, kInt16 };

// The original project's fake data: `count` generated tiles, `delay_s` seconds each.
struct FakeDataOptions {
  // A constructor rather than an aggregate, so `{count, delay}` leaves `sample` unset
  // without a missing-initializer warning at every caller.
  FakeDataOptions(int tiles = 100, double seconds_each = 0.0, std::optional<RawSample> type = std::nullopt)
      : count(tiles), delay_s(seconds_each), sample(type) {}
  int count;
  double delay_s;
  // Unset: float32 tiles. kUInt8 or kUInt16: the same pattern as the type's integers,
  // handed on raw as a Byte or UInt16 raster's are (SourceOptions::raw_samples), so fake
  // runs exercise the raw batches too (source/fake_source.hpp).
  std::optional<RawSample> sample;
};

// The model's ground resolution and what is done with rasters whose own differs.
struct GroundResolution {
  double model_gsd = 0;         // metres per pixel; 0: unknown, rasters are read as they are
  double tolerance = 0.1;       // relative difference read as it is
  bool resample = true;         // false: a raster that differs is read as it is, with a warning
  std::string method = "auto";  // mgpr/run_choices.hpp's kResamplingNames
};

// The source stage's own options: which rasters, which bands, how pixels are scaled, how
// they are tiled.
struct SourceOptions {
  std::vector<std::string> rasters;
  std::optional<FakeDataOptions> fake;  // set: fake data, and `rasters` is ignored
  std::vector<int> bands;               // 1-based; empty: the first min(3, band count)
  NodataRule nodata;                    // which pixels are missing (mgpr/run_choices.hpp)
  // value = (raw * scale - mean[band]) / std[band]; scale 0: by the data type (1/255 for
  // uint8, 1/65535 for uint16, 1/32767 for int16, 1 for float32). mean and std: one
  // value per selected band, one for all, or none (0 and 1).
  double scale = 0.0;
  std::vector<double> mean;
  std::vector<double> std;
  int tile_size = 1024;
  int overlap = 0;
  GroundResolution resolution;  // tile_size and overlap count pixels at resolution.model_gsd when read so
  int readers = 1;              // threads that read tiles during the run (workers=)
  int open_threads = 1;         // threads that open and check the rasters at start-up
  // When every raster is read as one integer type of 8 or 16 bits (Byte, UInt16, Int16),
  // hand its samples on as they are (TileData::bytes), a quarter or half of float32's
  // size, to be scaled on the model's device (TileSource::raw_scaling,
  // pipeline/raw_scaler.hpp).
  bool raw_samples = false;
};

constexpr std::size_t raw_sample_size(RawSample sample) { return sample == RawSample::kUInt8 ? 1 : 2; }

// mean= or std= for `bands` bands: none given (`fallback` each), one for all, or one per
// band; nullopt for another count (the caller names the key and the bands).
std::optional<std::vector<double>> values_per_band(const std::vector<double>& values, std::size_t bands,
                                                   double fallback);

// How raw samples become the model's values: value = raw * gain[band] + offset[band]
// ((raw * scale - mean) / std folded once), then 0 where the tile's valid mask is 0.
struct RawScaling {
  std::vector<float> gain;  // one per channel
  std::vector<float> offset;
  RawSample sample = RawSample::kUInt8;
  friend bool operator==(const RawScaling&, const RawScaling&) = default;
};

// One tile read and converted for the model: float CHW, tile_size x tile_size. Pixels
// outside the image (a raster smaller than a tile) and nodata pixels are 0 after scaling.
// From a source with raw_scaling(), the samples are raw instead, in the rasters' own
// type, scaled (and the pixels `valid` marks 0 set to 0) on the model's device.
struct TileData {
  Tile tile;
  int channels = 0;
  int height = 0;
  int width = 0;
  std::vector<float> pixels;  // channels * height * width, CHW; empty when raw
  // The same, raw, from a source with raw_scaling(): raw_sample_size(raw_sample) bytes a
  // sample, in the machine's byte order; else empty.
  std::vector<std::uint8_t> bytes;
  RawSample raw_sample = RawSample::kUInt8;
  std::vector<std::uint8_t> valid;  // height * width, 1 where every band has data; empty: all valid
  double read_s = 0;                // seconds spent reading and converting
  // Set when the reader thread put the samples straight into a batch slot's row
  // (source/reader_pool.hpp's TilePlacer); pixels and bytes are then empty.
  struct Placement {
    int slot = 0;
    int row = 0;
  };
  std::optional<Placement> placed;
};

// What the run knows about one input raster, for tiling and, later, georeferencing.
struct RasterDescription {
  std::string path;
  int width = 0;
  int height = 0;
  int band_count = 0;
  std::string data_type;  // GDAL's name: Byte, UInt16, Int16, Float32, ...
  // The 1-based bands fed to the model: SourceOptions::bands, else the first min(3,
  // band_count) less any alpha band.
  std::vector<int> bands;
  std::optional<double> nodata;  // as the first selected band declares it, whatever nodata= says
  // Which pixels are missing (valid 0, zero in every channel), for the banner: "nodata 255
  // in all bands", "nodata 0, 0, 255 in bands 1, 2, 3 at once", "alpha band 4", "internal
  // mask", "mask file 'a.tif.msk'", "nodata=0 in all bands", "none (nodata=none)", "none";
  // "; NaN in any band" is added for floating-point rasters.
  std::string missing_pixels;
  std::optional<GeoTransform> geotransform;  // checked when opened; none without georeferencing
  std::string crs_wkt;                       // empty when none
  bool crs_geographic = false;               // the CRS is in degrees
  // The raster's own pixel size on the ground in metres (x; 0 when not known: no
  // georeferencing, or degrees), and what is done about it, for the banner: "0.1 m, read
  // at the model's 0.2 m (average)", "0.1 m", "0.03 m; the model's gsd is unknown".
  double resolution_m = 0;
  std::string resolution_note;
  // The note is a warning: the raster is read at a resolution other than the model's
  // (resample=false), or the model's gsd is set and the raster's cannot be compared with
  // it (no georeferencing, no CRS, degrees with resample=false).
  bool resolution_warning = false;
  // Set when the raster is read resampled to the model's gsd: its own grid. width, height
  // and geotransform above are then the model's grid over the same footprint, which
  // tiles, boxes and class rasters are counted in.
  struct NativeGrid {
    int width = 0;
    int height = 0;
    GeoTransform geotransform;
  };
  std::optional<NativeGrid> native_grid;
};

// Rasters that could not be read during the run (index = TileId::image → why, naming the
// raster): their tiles are left undone, the other rasters finish.
using RasterFailures = std::map<int, std::string>;

class TileReader {
 public:
  virtual ~TileReader() = default;
  // Fills `out` (reusing its buffers) with `tile`; throws std::runtime_error naming the
  // raster and the window when the read fails.
  virtual void read(const Tile& tile, TileData& out) = 0;
};

class TileSource {
 public:
  virtual ~TileSource() = default;
  // Every tile of the run, all rasters, in id order: the same on every rank.
  [[nodiscard]] virtual const std::vector<Tile>& tiles() const = 0;
  [[nodiscard]] virtual const std::vector<RasterDescription>& rasters() const = 0;  // empty for fake data
  [[nodiscard]] virtual int channels() const = 0;
  [[nodiscard]] virtual int tile_size() const = 0;
  // Thread-safe; the reader it returns is for one thread.
  [[nodiscard]] virtual std::unique_ptr<TileReader> open_reader() const = 0;
  // Set when the tiles come raw (TileData::bytes): how to scale them.
  [[nodiscard]] virtual std::optional<RawScaling> raw_scaling() const { return std::nullopt; }
};

// The fake source when options.fake is set, else the rasters of options.rasters (all
// opened and checked here, so a bad input is reported by name before any work; a build
// without GDAL refuses rasters). Throws UsageError naming the input, what is wrong and
// the fix, also for a tile past mgpr/tile_limits.hpp's bounds. Readers it hands out
// refer to it: the source must outlive them.
std::unique_ptr<TileSource> make_tile_source(const SourceOptions& options);

}  // namespace mgpr::runtime
