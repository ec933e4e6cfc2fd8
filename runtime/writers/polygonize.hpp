#pragma once
// Class regions (geometry/class_regions.hpp) made polygons with GDAL: a core's regions
// polygonised (GDALPolygonize, 4-connected), the pieces of one shape from several tiles
// united (GEOS, through OGR), a polygon simplified. Coordinates are the raster's pixels
// until simplify_polygon, which works on the map's.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "geometry/class_regions.hpp"
#include "writers/records.hpp"

namespace mgpr::runtime {

// Per region of `labels` (core.width x core.height, row by row; 0: no region, else 1 +
// the region's index, `count` regions): its polygon. Throws std::runtime_error in GDAL's
// words.
std::vector<PixelPolygon> polygonize_regions(std::span<const std::int32_t> labels, const PixelWindow& core,
                                             std::size_t count);

// The pieces of one shape as one polygon: pieces that share edges unite into one; pieces
// that do not stay apart (one polygon each). Rings keep no point on a straight line.
std::vector<PixelPolygon> unite_polygons(std::span<const PixelPolygon> pieces);

// `polygon` simplified to `tolerance` (its own units), keeping it a valid polygon with
// its holes (GEOS's topology-preserving simplification); as it was when that leaves
// nothing.
Geometry simplify_polygon(const Geometry& polygon, double tolerance);

}  // namespace mgpr::runtime
