#include "geometry/georef.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mgpr::runtime {

namespace {

// The rotation/scale part's determinant; zero (or non-finite terms) leaves no inverse.
double determinant(const std::array<double, 6>& t) { return t[1] * t[5] - t[2] * t[4]; }

}  // namespace

GeoTransform::GeoTransform(std::span<const double> terms) {
  if (terms.empty()) return;
  if (terms.size() != terms_.size()) {
    throw std::invalid_argument("a geotransform has 6 terms, got " + std::to_string(terms.size()));
  }
  std::copy(terms.begin(), terms.end(), terms_.begin());
  const bool finite = std::all_of(terms_.begin(), terms_.end(), [](double term) { return std::isfinite(term); });
  const double det = determinant(terms_);
  if (!finite || det == 0 || !std::isfinite(det)) {
    throw std::invalid_argument("geotransform is not invertible");
  }
}

MapPoint GeoTransform::to_map(double column, double row) const {
  const auto& t = terms_;
  return {t[0] + column * t[1] + row * t[2], t[3] + column * t[4] + row * t[5]};
}

MapPoint GeoTransform::to_pixel(double map_x, double map_y) const {
  const auto& t = terms_;
  const double det = determinant(t);
  const double dx = map_x - t[0];
  const double dy = map_y - t[3];
  return {(t[5] * dx - t[2] * dy) / det, (t[1] * dy - t[4] * dx) / det};
}

std::array<MapPoint, 4> GeoTransform::footprint(double x1, double y1, double x2, double y2) const {
  return {to_map(x1, y1), to_map(x2, y1), to_map(x2, y2), to_map(x1, y2)};
}

GeoTransform GeoTransform::shifted(double column, double row) const {
  // Only the origin moves; pixel size and rotation are the parent's.
  GeoTransform sub = *this;
  const MapPoint origin = to_map(column, row);
  sub.terms_[0] = origin.x;
  sub.terms_[3] = origin.y;
  return sub;
}

bool GeoTransform::is_identity() const { return terms_ == std::array<double, 6>{0, 1, 0, 0, 0, 1}; }

}  // namespace mgpr::runtime
