#pragma once
// GeoParquet's agreements, apart from Arrow (geoparquet_writer.hpp writes them): the
// geometry as WKB, the covering box of each row, the order rows are packed in, the
// file's "geo" metadata (GeoParquet 1.1.0) and the dataset's manifest. Nothing here
// needs Arrow, so every build tests them.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "writers/records.hpp"

namespace mgpr::runtime::output {

// A box in the layer's CRS; empty until a point is added.
struct Bounds {
  double xmin = std::numeric_limits<double>::infinity();
  double ymin = std::numeric_limits<double>::infinity();
  double xmax = -std::numeric_limits<double>::infinity();
  double ymax = -std::numeric_limits<double>::infinity();
  [[nodiscard]] bool empty() const { return xmin > xmax; }
  void add(const Bounds& other);
};
Bounds bounds_of(const Geometry& geometry);

// The polygon as ISO WKB, little-endian, its rings closed: GeoParquet's "WKB" encoding.
std::string polygon_wkb(const Geometry& geometry);

// The positions of `boxes` in the Hilbert order of their centres over the boxes' own
// extent: neighbours on the ground become neighbours in the file, so a row group's
// statistics (its covering box) are tight and a window query reads few of them.
std::vector<std::size_t> hilbert_order(std::span<const Bounds> boxes);

// The file's "geo" key (GeoParquet 1.1.0): its one geometry column "geometry", WKB of
// polygons, its CRS as PROJJSON (`projjson` empty: null, the coordinates are pixels),
// the bbox of its rows (none without rows) and the covering column "bbox".
std::string geo_metadata(const std::string& projjson, const Bounds& bbox);

// One part of a dataset as its manifest lists it.
struct PartRecord {
  std::string file;   // its name in the dataset's folder
  std::string layer;  // the layer it holds rows of
  std::int64_t rows = 0;
  Bounds bbox;
  std::string sha256;  // of the file's bytes, in hex
};
// The dataset's _manifest.json, written last: its parts (rows, bbox, checksum), what
// wrote them and the run's settings its results depend on (its journal's: the model's
// identity among them). A folder without it is not a complete dataset.
std::string manifest_json(std::span<const PartRecord> parts, std::string_view writer,
                          std::span<const std::pair<std::string, std::string>> run_settings = {});

}  // namespace mgpr::runtime::output
