#include "source/raster_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gdal_pam.h>
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
#include <unordered_map>
#include <utility>

#include "gdal/gdal_errors.hpp"
#include "gdal/remote_reads.hpp"
#include "mgpr/error.hpp"
#include "mgpr/tile_limits.hpp"
#include "source/missing_pixels.hpp"
#include "source/raster_reader.hpp"
#include "source/read_retry.hpp"

namespace mgpr::runtime {
namespace {

std::string plural(std::size_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// GDAL also opens "/vsicurl/...", "NETCDF:file:var" and the like; only plain paths can
// be told missing by looking at the file system.
bool is_plain_path(const std::string& path) { return !path.starts_with("/vsi") && path.find(':') == std::string::npos; }

// What a path is when it is neither a file nor a folder (which some formats are); empty
// otherwise. GDAL's open of a FIFO waits for a writer, forever.
std::string_view special_kind(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || S_ISREG(status.st_mode) || S_ISDIR(status.st_mode)) return {};
  if (S_ISFIFO(status.st_mode)) return "FIFO";
  if (S_ISSOCK(status.st_mode)) return "socket";
  if (S_ISCHR(status.st_mode)) return "character device";
  if (S_ISBLK(status.st_mode)) return "block device";
  return "special file";
}

GDALDatasetUniquePtr open_or_explain(const std::string& path) {
  if (is_plain_path(path)) {
    if (const auto kind = special_kind(path); !kind.empty()) {
      throw UsageError(
          fmt::format("raster '{}' is a {}, not a raster file; give the path of a GeoTIFF or another "
                      "raster file GDAL reads (a pipe can be copied to a file first)",
                      path, kind));
    }
  }
  CPLErrorReset();
  auto dataset = open_raster_dataset(path);
  if (dataset) return dataset;
  if (auto remote = explain_remote_open_failure(path)) throw UsageError(*remote);
  std::error_code error;
  if (is_plain_path(path) && !std::filesystem::exists(path, error)) {
    throw UsageError(
        fmt::format("raster '{}' does not exist; check the path (relative paths start from {}), or "
                    "pass use_fake_data=true for a fake-data environment check",
                    path, std::filesystem::current_path(error).string()));
  }
  const std::string reason = gdal_last_error("GDAL recognises no raster format in it");
  throw UsageError(
      fmt::format("raster '{}' cannot be opened as a raster: {}; check that it is a complete GeoTIFF "
                  "or another format GDAL reads (`gdalinfo {}` shows what GDAL sees), and copy it "
                  "again if it was cut short",
                  path, reason, path));
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
  if (values.empty()) return std::vector<double>(bands.size(), fallback);
  if (values.size() == 1) return std::vector<double>(bands.size(), values.front());
  if (values.size() == bands.size()) return values;
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

// The raw GeoTIFF keys of a TIFF file's first image (the GeoKeyDirectory, GeoDoubleParams
// and GeoAsciiParams tags, as stored, with the byte order): all that GDAL derives the
// image's CRS from, unless a sidecar overrides it. Nullopt when the file has no GeoKey
// directory or is not a TIFF read here; a few small reads of the file's header.
std::optional<std::string> geotiff_keys(const std::string& path) {
  const int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return std::nullopt;
  struct Closer {
    int file;
    ~Closer() { ::close(file); }
  } const closer{file};
  const auto read_at = [&](std::uint64_t offset, std::size_t size, std::string& into) {
    into.resize(size);
    return offset <= static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) &&
           ::pread(file, into.data(), size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
  };
  std::string header;
  if (!read_at(0, 8, header)) return std::nullopt;
  const bool little = header.starts_with("II");
  if (!little && !header.starts_with("MM")) return std::nullopt;
  const auto number = [little](const char* bytes, int size) {
    std::uint64_t value = 0;
    for (int i = 0; i < size; ++i) {
      const auto byte = static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[little ? size - 1 - i : i]));
      value = (value << 8) | byte;
    }
    return value;
  };
  const auto version = number(header.data() + 2, 2);
  const bool big_tiff = version == 43;
  if (version != 42 && !big_tiff) return std::nullopt;
  std::uint64_t directory = number(header.data() + 4, 4);
  if (big_tiff) {
    if (number(header.data() + 4, 2) != 8 || !read_at(8, 8, header)) return std::nullopt;
    directory = number(header.data(), 8);
  }
  const int count_size = big_tiff ? 8 : 2;
  const int entry_size = big_tiff ? 20 : 12;
  const int value_size = big_tiff ? 8 : 4;
  std::string entries;
  if (!read_at(directory, static_cast<std::size_t>(count_size), entries)) return std::nullopt;
  const auto entry_count = number(entries.data(), count_size);
  if (entry_count == 0 || entry_count > 4096 ||
      !read_at(directory + static_cast<std::uint64_t>(count_size), entry_count * entry_size, entries)) {
    return std::nullopt;
  }
  std::string key(1, little ? 'I' : 'M');
  bool has_directory = false;
  for (std::uint64_t i = 0; i < entry_count; ++i) {
    const char* entry = entries.data() + i * entry_size;
    const auto tag = number(entry, 2);
    if (tag != 34735 && tag != 34736 && tag != 34737) continue;
    // SHORT, DOUBLE and ASCII, as the GeoTIFF specification has them; anything else is
    // left to GDAL.
    const auto type = number(entry + 2, 2);
    const int item_size = tag == 34735 ? 2 : tag == 34736 ? 8 : 1;
    if (type != (tag == 34735 ? 3U : tag == 34736 ? 12U : 2U)) return std::nullopt;
    const auto items = number(entry + 4, value_size);
    if (items > (std::uint64_t{1} << 20)) return std::nullopt;
    const auto bytes = items * item_size;
    const char* value = entry + 4 + value_size;
    std::string data;
    if (bytes <= static_cast<std::uint64_t>(value_size)) {
      data.assign(value, bytes);
    } else if (!read_at(number(value, value_size), bytes, data)) {
      return std::nullopt;
    }
    has_directory = has_directory || tag == 34735;
    key += fmt::format("{}:{}:", tag, bytes);
    key += data;
  }
  if (!has_directory) return std::nullopt;
  return key;
}

// What a raster's CRS gives its description and plan.
struct RasterCrs {
  bool present = false;
  std::string wkt;  // empty when absent or not exportable
  std::optional<CrsUnits> units;
};

RasterCrs raster_crs_of(const OGRSpatialReference* srs) {
  RasterCrs crs;
  if (srs == nullptr) return crs;
  crs.present = true;
  char* wkt = nullptr;
  if (srs->exportToWkt(&wkt) == OGRERR_NONE && wkt != nullptr) crs.wkt = wkt;
  CPLFree(wkt);
  crs.units = crs_units(srs);
  return crs;
}

// GDAL builds a GeoTIFF's CRS from its GeoTIFF keys with lookups in PROJ's database, about
// 0.4 ms a raster, while the rasters of a folder nearly always share their keys. So within
// one run, the CRS of a GeoTIFF whose keys were seen before is taken from the first raster
// that had them. Only where GDAL's CRS is a function of the keys alone: a local GeoTIFF,
// no GCPs, no CRS from a PAM sidecar (.aux.xml, .aux: they come before the keys), the
// default georeferencing sources, and the first one's keys gave a CRS (when they give
// none, GDAL looks further, at files beside the raster). Opened on several threads.
class CrsCache {
 public:
  RasterCrs crs_of(GDALDataset& dataset, const std::string& path) {
    const auto key = key_of(dataset, path);
    if (key) {
      const std::lock_guard lock(mutex_);
      if (const auto found = known_.find(*key); found != known_.end()) return found->second;
    }
    auto crs = raster_crs_of(dataset.GetSpatialRef());
    if (key && crs.present) {
      const std::lock_guard lock(mutex_);
      known_.emplace(*key, crs);
    }
    return crs;
  }

 private:
  static std::optional<std::string> key_of(GDALDataset& dataset, const std::string& path) {
    const auto* driver = dataset.GetDriver();
    if (driver == nullptr || std::string_view(driver->GetDescription()) != "GTiff" || !is_plain_path(path) ||
        CPLGetConfigOption("GDAL_GEOREF_SOURCES", nullptr) != nullptr) {
      return std::nullopt;
    }
    // GetGCPCount loads the georeferencing and the PAM sidecars first, as GetSpatialRef does.
    auto* pam = dynamic_cast<GDALPamDataset*>(&dataset);
    if (pam == nullptr || dataset.GetGCPCount() != 0 || pam->GDALPamDataset::GetSpatialRef() != nullptr) {
      return std::nullopt;
    }
    return geotiff_keys(path);
  }

  std::mutex mutex_;
  std::unordered_map<std::string, RasterCrs> known_;
};

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
  // After the probe, which reads the raster's own last pixel.
  plan.resampled = plan_ground_resolution(options.resolution, crs.units, description);
  plan.width = description.width;
  plan.height = description.height;
  return opened;
}

// "0.1 m", "0.3048 m", "30 m".
std::string metres(double value) { return fmt::format("{:.4g} m", value); }

// GDAL's resampling on read for resampling=NAME; auto: average when the model's pixels
// are larger than the raster's (each takes the mean of the pixels it covers), bilinear
// when smaller.
std::pair<GDALRIOResampleAlg, std::string_view> resampling_of(const std::string& method, bool coarsening) {
  static constexpr std::array<std::pair<std::string_view, GDALRIOResampleAlg>, 7> kMethods{{
      {"nearest", GRIORA_NearestNeighbour},
      {"bilinear", GRIORA_Bilinear},
      {"cubic", GRIORA_Cubic},
      {"cubicspline", GRIORA_CubicSpline},
      {"lanczos", GRIORA_Lanczos},
      {"average", GRIORA_Average},
      {"mode", GRIORA_Mode},
  }};
  const std::string_view name = method == "auto" || method.empty() ? (coarsening ? "average" : "bilinear") : method;
  for (const auto& [known, algorithm] : kMethods) {
    if (known == name) return {algorithm, known};
  }
  // The configuration checks the name against kResamplingNames before any stage runs.
  throw std::logic_error(fmt::format("resampling={} reached the source unchecked", method));
}

// The EPSG code of the UTM zone of a longitude and latitude (WGS 84), for the fix of a
// raster in degrees; nullopt outside the ranges of degrees.
std::optional<int> utm_epsg(double longitude, double latitude) {
  if (!(longitude >= -180.0 && longitude <= 180.0 && latitude >= -90.0 && latitude <= 90.0)) return std::nullopt;
  const int zone = std::clamp(static_cast<int>(std::floor((longitude + 180.0) / 6.0)) + 1, 1, 60);
  return (latitude >= 0 ? 32600 : 32700) + zone;
}

}  // namespace

std::optional<CrsUnits> crs_units(const OGRSpatialReference* crs) {
  if (crs == nullptr) return std::nullopt;
  CrsUnits units;
  units.geographic = crs->IsGeographic();
  if (!units.geographic) units.metres_per_unit = crs->GetLinearUnits(nullptr);
  return units;
}

std::optional<ResampledRead> plan_ground_resolution(const GroundResolution& resolution, const OGRSpatialReference* crs,
                                                    RasterDescription& description) {
  return plan_ground_resolution(resolution, crs_units(crs), description);
}

std::optional<ResampledRead> plan_ground_resolution(const GroundResolution& resolution,
                                                    const std::optional<CrsUnits>& crs,
                                                    RasterDescription& description) {
  const double gsd = resolution.model_gsd;
  const bool model_known = gsd > 0;
  const std::string model = model_known ? fmt::format("the model's {}", metres(gsd)) : std::string();
  if (!description.geotransform || description.geotransform->is_identity()) {
    description.resolution_note =
        model_known ? fmt::format("unknown (no georeferencing): read as it is, not compared with {}", model)
                    : "unknown (no georeferencing)";
    description.resolution_warning = model_known;
    return std::nullopt;
  }
  const auto& terms = description.geotransform->terms();
  // A pixel's sides, rotation or not: the lengths of the column and row steps.
  const double pixel_x = std::hypot(terms[1], terms[4]);
  const double pixel_y = std::hypot(terms[2], terms[5]);
  if (!crs) {
    description.resolution_note =
        model_known
            ? fmt::format("unknown (no CRS, so its units are unknown): read as it is, not compared with {}", model)
            : "unknown (no CRS, so its units are unknown)";
    description.resolution_warning = model_known;
    return std::nullopt;
  }
  if (crs->geographic) {
    const std::string degrees = fmt::format("{:.3g} degrees", pixel_x);
    if (model_known && resolution.resample) {
      const auto centre = description.geotransform->to_map(description.width / 2.0, description.height / 2.0);
      const auto epsg = utm_epsg(centre.x, centre.y);
      throw UsageError(fmt::format(
          "raster '{}' has a CRS in degrees (pixels of {}), so it cannot be read at the model's gsd={} m, which is "
          "in metres; reproject it to a projected CRS first, e.g. `gdalwarp -t_srs {} -tr {} {} -r average {} "
          "out.tif`{}, or pass resample=false to read it as it is",
          description.path, degrees, gsd, epsg ? fmt::format("EPSG:{}", *epsg) : "EPSG:<UTM zone>", gsd, gsd,
          description.path, epsg ? fmt::format(" (EPSG:{} is the UTM zone at its centre)", *epsg) : ""));
    }
    description.resolution_note =
        model_known ? fmt::format("{} (a CRS in degrees): read as it is, not compared with {}", degrees, model)
                    : fmt::format("{} (a CRS in degrees)", degrees);
    description.resolution_warning = model_known;
    return std::nullopt;
  }
  const double unit = crs->metres_per_unit;
  const double metres_x = pixel_x * unit;
  const double metres_y = pixel_y * unit;
  description.resolution_m = metres_x;
  const bool square = std::abs(metres_x - metres_y) <= 1e-9 * std::max(metres_x, metres_y);
  const std::string own = square ? metres(metres_x) : fmt::format("{:.4g} x {}", metres_x, metres(metres_y));
  if (!model_known) {
    description.resolution_note = fmt::format("{}; the model's gsd is unknown (set gsd= or use a model card)", own);
    return std::nullopt;
  }
  const auto differs = [&](double size) { return std::abs(size - gsd) / gsd > resolution.tolerance; };
  if (!differs(metres_x) && !differs(metres_y)) {
    description.resolution_note = metres_x == gsd && square
                                      ? own
                                      : fmt::format("{}, within {:g}% of {}", own, resolution.tolerance * 100.0, model);
    return std::nullopt;
  }
  if (!resolution.resample) {
    description.resolution_note = fmt::format(
        "{}, read as it is (resample=false) although the model's gsd is {}: objects are {:.2g}x as many pixels "
        "across as the model expects",
        own, metres(gsd), gsd / metres_x);
    description.resolution_warning = true;
    return std::nullopt;
  }

  ResampledRead read;
  read.native_width = description.width;
  read.native_height = description.height;
  const double target = gsd / unit;  // the model's pixel in CRS units
  read.x_ratio = target / pixel_x;
  read.y_ratio = target / pixel_y;
  const auto [algorithm, method] = resampling_of(resolution.method, read.x_ratio > 1.0);
  read.data = algorithm;
  const double width = std::max(1.0, std::round(description.width / read.x_ratio));
  const double height = std::max(1.0, std::round(description.height / read.y_ratio));
  if (width > std::numeric_limits<int>::max() || height > std::numeric_limits<int>::max()) {
    throw UsageError(
        fmt::format("raster '{}' ({}) read at the model's gsd={} m would be {:.0f} x {:.0f} pixels, more than mgpr "
                    "counts; check gsd=, or pass resample=false",
                    description.path, own, gsd, width, height));
  }
  description.native_grid =
      RasterDescription::NativeGrid{description.width, description.height, *description.geotransform};
  // Same origin and directions, each step stretched to the model's pixel.
  description.geotransform =
      GeoTransform(std::array<double, 6>{terms[0], terms[1] * read.x_ratio, terms[2] * read.y_ratio, terms[3],
                                         terms[4] * read.x_ratio, terms[5] * read.y_ratio});
  description.width = static_cast<int>(width);
  description.height = static_cast<int>(height);
  description.resolution_note = fmt::format("{}, read at {} ({})", own, model, method);
  return read;
}

namespace {

class RasterSource final : public TileSource {
 public:
  RasterSource(std::vector<RasterDescription> rasters, std::vector<RasterReadPlan> plans, std::vector<Tile> tiles,
               int channels, int tile_size)
      : rasters_(std::move(rasters)),
        plans_(std::move(plans)),
        tiles_(std::move(tiles)),
        channels_(channels),
        tile_size_(tile_size) {}

  [[nodiscard]] const std::vector<Tile>& tiles() const override { return tiles_; }
  [[nodiscard]] const std::vector<RasterDescription>& rasters() const override { return rasters_; }
  [[nodiscard]] int channels() const override { return channels_; }
  [[nodiscard]] int tile_size() const override { return tile_size_; }
  [[nodiscard]] std::unique_ptr<TileReader> open_reader() const override {
    return with_read_retries(std::make_unique<RasterReader>(plans_, tile_size_), plans_);
  }

 private:
  const std::vector<RasterDescription> rasters_;
  const std::vector<RasterReadPlan> plans_;  // never resized: readers hold a span of it
  const std::vector<Tile> tiles_;
  const int channels_;
  const int tile_size_;
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
                                        options.tile_size);
}

}  // namespace mgpr::runtime
