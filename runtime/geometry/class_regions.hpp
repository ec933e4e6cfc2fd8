#pragma once
// The regions of one tile's core of classes (task=segment, polygons=true): the pixels of
// one class joined through their edges (4-connected, as GDAL's polygonize joins them by
// default), each with its pixel count, the sum of its pixels' scores, and the runs of its
// pixels along each side of the core that borders another tile's core (a seam). A region
// with no seam run is whole; the others are joined with the regions across their seams by
// region_dissolve.hpp. Pure arithmetic: the polygons themselves are GDAL's
// (writers/polygonize.hpp).
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "geometry/tiler.hpp"

namespace mgpr::runtime {

// A corner of a pixel, in the raster's pixel coordinates.
struct PixelPoint {
  int x = 0;
  int y = 0;
  bool operator==(const PixelPoint&) const = default;
};
using PixelRing = std::vector<PixelPoint>;  // closed: its last point repeats its first
// One polygon: its outer ring, then its holes.
struct PixelPolygon {
  std::vector<PixelRing> rings;
  bool operator==(const PixelPolygon&) const = default;
};

// A run of a region's pixels along one side of its core that borders another core.
struct SeamRun {
  enum class Side : std::uint8_t { kTop, kBottom, kLeft, kRight };
  Side side = Side::kTop;
  // The seam's line in raster pixels: y of a top or bottom side, x of a left or right
  // one (the edge between the pixels, so a bottom side's line is the core's end).
  int line = 0;
  int begin = 0;  // [begin, end) along the line, in raster pixels
  int end = 0;
  bool operator==(const SeamRun&) const = default;
};

struct ClassRegion {
  int class_value = 0;
  std::int64_t pixels = 0;
  double score_sum = 0;  // the pixels' scores summed in scan order; 0 without scores
  std::vector<SeamRun> seams;
  bool operator==(const ClassRegion&) const = default;
};

// Which sides of a core border another tile's core (not the raster's edge).
struct CoreSeams {
  bool top = false;
  bool bottom = false;
  bool left = false;
  bool right = false;
};

struct CoreRegions {
  // Per core pixel, row by row: 0 where the class is left out, else 1 + the index of its
  // region. Regions are numbered in scan order of their first pixel.
  std::vector<std::int32_t> labels;
  std::vector<ClassRegion> regions;
};

// The regions of `classes` (core.width x core.height, row by row), leaving out the
// classes `left_out` marks. `scores` (the winning class's probability per pixel) may be
// empty.
CoreRegions class_regions(std::span<const std::uint8_t> classes, std::span<const float> scores, const PixelWindow& core,
                          const CoreSeams& seams, const std::array<bool, 256>& left_out);

// Twice the signed area of a closed ring (shoelace), exact in integers: positive when
// the ring runs clockwise on the raster (y down).
std::int64_t twice_area(const PixelRing& ring);
// The polygon's area in pixels: its outer ring's less its holes'.
double pixel_area(const PixelPolygon& polygon);
// `ring` without the points that lie on a straight line between their neighbours (the
// seams a union leaves on an edge); it stays closed.
PixelRing without_collinear_points(const PixelRing& ring);

}  // namespace mgpr::runtime
