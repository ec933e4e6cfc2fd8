#pragma once
// A raster's CRS as the source needs it (WKT, units), looked up once per distinct set of
// GeoTIFF keys in a run: GDAL builds a CRS with lookups in PROJ's database, and the
// rasters of a folder nearly always share theirs. Only compiled when the build has GDAL.
#include <gdal_priv.h>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "source/ground_resolution.hpp"

namespace mgpr::runtime {

// The raw GeoTIFF keys of a TIFF file's first image (the GeoKeyDirectory, GeoDoubleParams
// and GeoAsciiParams tags, as stored, with the byte order): all that GDAL derives the
// image's CRS from, unless a sidecar overrides it. Nullopt when the file has no GeoKey
// directory or is not a TIFF read here; a few small reads of the file's header.
std::optional<std::string> geotiff_keys(const std::string& path);

// What a raster's CRS gives its description and plan.
struct RasterCrs {
  bool present = false;
  std::string wkt;  // empty when absent or not exportable
  std::optional<CrsUnits> units;
};

// The WKT and units of `srs` (nullptr: no CRS).
RasterCrs raster_crs_of(const OGRSpatialReference* srs);

// GDAL builds a GeoTIFF's CRS from its GeoTIFF keys with lookups in PROJ's database, about
// 0.4 ms a raster, while the rasters of a folder nearly always share their keys. So within
// one run, the CRS of a GeoTIFF whose keys were seen before is taken from the first raster
// that had them. Only where GDAL's CRS is a function of the keys alone: a local GeoTIFF,
// no GCPs, no CRS from a PAM sidecar (.aux.xml, .aux: they come before the keys), the
// default georeferencing sources, and the first one's keys gave a CRS (when they give
// none, GDAL looks further, at files beside the raster). Opened on several threads.
class CrsCache {
 public:
  // The CRS of `dataset`, opened from `path`. Thread-safe.
  RasterCrs crs_of(GDALDataset& dataset, const std::string& path);

 private:
  static std::optional<std::string> key_of(GDALDataset& dataset, const std::string& path);

  std::mutex mutex_;
  std::unordered_map<std::string, RasterCrs> known_;
};

}  // namespace mgpr::runtime
