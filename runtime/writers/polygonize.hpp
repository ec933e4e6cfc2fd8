#pragma once
// What polygons need of GDAL: the pieces of one shape from several tiles united, first
// as pixels (geometry/pixel_polygons.hpp) and through GEOS where that cannot, and a
// polygon simplified (GEOS, through OGR). Coordinates are the raster's pixels until
// simplify_polygon, which works on the map's.
#include <span>
#include <vector>

#include "geometry/class_regions.hpp"
#include "writers/records.hpp"

namespace mgpr::runtime {

// The pieces of one shape as one polygon: pieces that share edges unite into one; pieces
// that do not stay apart (one polygon each). Rings keep no point on a straight line.
std::vector<PixelPolygon> unite_polygons(std::span<const PixelPolygon> pieces);

// `polygon` simplified to `tolerance` (its own units), keeping it a valid polygon with
// its holes (GEOS's topology-preserving simplification); as it was when that leaves
// nothing.
Geometry simplify_polygon(const Geometry& polygon, double tolerance);

}  // namespace mgpr::runtime
