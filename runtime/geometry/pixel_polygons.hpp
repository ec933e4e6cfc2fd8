#pragma once
// Polygons whose edges run along pixel edges, made in time linear in their perimeter:
// the regions of a labelled core traced, and the pieces of one shape from several cores
// united. Both work on unit edges directed with the shape's inside on their right: an
// edge met in both directions lies between two pieces and cancels, and what is left is
// linked into rings. General polygon union (GEOS) is quadratic in a shape's holes, and
// a large noisy class region has thousands; GDAL's polygonize visits every pixel of a
// core, where this visits the runs of a row and the boundary.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "geometry/class_regions.hpp"

namespace mgpr::runtime {

// Per region of `labels` (core.width x core.height, row by row; 0: no region, else 1 +
// the region's index, `count` regions, each 4-connected as class_regions makes them):
// its polygon in the raster's pixels, the same point set as GDAL's polygonize gives.
std::vector<PixelPolygon> region_polygons(std::span<const std::int32_t> labels, const PixelWindow& core,
                                          std::size_t count);

// The pieces as one polygon. nullopt when they do not make one polygon (they touch only
// at corners, or not at all), or are not along pixel edges.
std::optional<PixelPolygon> unite_pixel_polygons(std::span<const PixelPolygon> pieces);

// Either way the polygon's outer ring comes first, then its holes, each ring closed, with
// no point on a straight line between its neighbours. Where the boundary passes a pixel
// corner twice (two pixels of the shape meeting only there) the rings are split at it,
// so no ring crosses or touches itself: the polygon is valid.

}  // namespace mgpr::runtime
