#pragma once
// Pixel to map coordinates through GDAL's six-term geotransform, rotation terms
// included. Pixel coordinates are GDAL's: (0, 0) is the top-left corner of the top-left
// pixel, so a pixel's centre is at (column + 0.5, row + 0.5).
#include <array>
#include <span>

namespace mgpr::runtime {

struct MapPoint {
  double x = 0;
  double y = 0;
  bool operator==(const MapPoint&) const = default;
};

class GeoTransform {
 public:
  // The identity (map = pixel), GDAL's default for a raster without georeferencing.
  GeoTransform() = default;
  // `terms` as GDALDataset::GetGeoTransform gives them; an empty span is the identity.
  // Throws std::invalid_argument when not 0 or 6 terms, or when not invertible.
  explicit GeoTransform(std::span<const double> terms);

  [[nodiscard]] MapPoint to_map(double column, double row) const;
  // The inverse, for tests and quicklooks.
  [[nodiscard]] MapPoint to_pixel(double map_x, double map_y) const;
  // The four corners of the pixel rectangle [x1, x2) x [y1, y2) in map coordinates, in
  // ring order: (x1,y1), (x2,y1), (x2,y2), (x1,y2). A rotated geotransform makes it a
  // parallelogram, so callers write polygons, never (min, max) pairs.
  [[nodiscard]] std::array<MapPoint, 4> footprint(double x1, double y1, double x2, double y2) const;
  // A geotransform for a sub-window whose top-left pixel is (column, row) of this one.
  [[nodiscard]] GeoTransform shifted(double column, double row) const;
  [[nodiscard]] const std::array<double, 6>& terms() const { return terms_; }
  [[nodiscard]] bool is_identity() const;

 private:
  std::array<double, 6> terms_{0, 1, 0, 0, 0, 1};
};

}  // namespace mgpr::runtime
