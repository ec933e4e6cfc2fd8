#include "source/ground_resolution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

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
  // Both arms string_views: with a std::string arm the result would be a temporary string
  // that `name` outlives.
  const std::string_view name = method == "auto" || method.empty()
                                    ? std::string_view(coarsening ? "average" : "bilinear")
                                    : std::string_view(method);
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

}  // namespace mgpr::runtime
