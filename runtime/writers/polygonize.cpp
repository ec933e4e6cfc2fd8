#include "writers/polygonize.hpp"

#include <fmt/format.h>
#include <gdal_priv.h>
#include <ogrsf_frmts.h>

#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "gdal/gdal_errors.hpp"
#include "geometry/pixel_polygons.hpp"
#include "writers/gdal_write.hpp"

namespace mgpr::runtime {
namespace {

[[noreturn]] void fail(std::string_view what) {
  throw std::runtime_error(fmt::format("cannot make polygons: {}: {}", what, gdal_last_error("no message")));
}

PixelRing ring_of(const OGRLinearRing& ring) {
  PixelRing out;
  out.reserve(static_cast<std::size_t>(ring.getNumPoints()));
  for (int i = 0; i < ring.getNumPoints(); ++i) {
    out.push_back({static_cast<int>(std::lround(ring.getX(i))), static_cast<int>(std::lround(ring.getY(i)))});
  }
  return without_collinear_points(out);
}

PixelPolygon polygon_of(const OGRPolygon& polygon) {
  PixelPolygon out;
  if (polygon.getExteriorRing() == nullptr) return out;
  out.rings.push_back(ring_of(*polygon.getExteriorRing()));
  for (int i = 0; i < polygon.getNumInteriorRings(); ++i) out.rings.push_back(ring_of(*polygon.getInteriorRing(i)));
  return out;
}

std::unique_ptr<OGRPolygon> ogr_pixel_polygon(const PixelPolygon& polygon) {
  auto out = std::make_unique<OGRPolygon>();
  for (const auto& ring : polygon.rings) {
    OGRLinearRing ogr_ring;
    for (const auto& point : ring) ogr_ring.addPoint(point.x, point.y);
    out->addRing(&ogr_ring);
  }
  return out;
}

void add_polygons(const OGRGeometry& geometry, std::vector<PixelPolygon>& out) {
  switch (wkbFlatten(geometry.getGeometryType())) {
    case wkbPolygon:
      out.push_back(polygon_of(*geometry.toPolygon()));
      break;
    case wkbMultiPolygon:
    case wkbGeometryCollection:
      for (const auto* part : *geometry.toGeometryCollection()) add_polygons(*part, out);
      break;
    default:
      break;  // lines or points: no area, nothing to keep
  }
}

}  // namespace

std::vector<PixelPolygon> unite_polygons(std::span<const PixelPolygon> pieces) {
  if (pieces.size() == 1) return {pieces.front()};
  // Pieces of pixels: their own union, linear in the perimeter. GEOS only for what that
  // refuses (pieces that do not make one polygon).
  if (auto united = unite_pixel_polygons(pieces)) return {std::move(*united)};
  const GdalErrorScope errors(GdalErrorScope::Warnings::kQuiet);
  OGRMultiPolygon all;
  for (const auto& piece : pieces) all.addGeometryDirectly(ogr_pixel_polygon(piece).release());
  const std::unique_ptr<OGRGeometry> united(all.UnionCascaded());
  if (!united) fail("the union of a shape's pieces (GDAL needs GEOS for it)");
  std::vector<PixelPolygon> out;
  add_polygons(*united, out);
  return out;
}

Geometry simplify_polygon(const Geometry& polygon, double tolerance) {
  if (tolerance <= 0 || polygon.rings.empty()) return polygon;
  const GdalErrorScope errors(GdalErrorScope::Warnings::kQuiet);
  const auto ogr = output::ogr_polygon(polygon);
  const std::unique_ptr<OGRGeometry> simple(ogr.SimplifyPreserveTopology(tolerance));
  if (!simple || simple->IsEmpty() || wkbFlatten(simple->getGeometryType()) != wkbPolygon) return polygon;
  Geometry out;
  const auto& result = *simple->toPolygon();
  const auto add = [&](const OGRLinearRing& ring) {
    std::vector<MapPoint> points;
    for (int i = 0; i < ring.getNumPoints(); ++i) points.push_back({ring.getX(i), ring.getY(i)});
    out.rings.push_back(std::move(points));
  };
  add(*result.getExteriorRing());
  for (int i = 0; i < result.getNumInteriorRings(); ++i) add(*result.getInteriorRing(i));
  return out;
}

}  // namespace mgpr::runtime
