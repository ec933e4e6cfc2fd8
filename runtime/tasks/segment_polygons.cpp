#include "tasks/segment_polygons.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "geometry/pixel_polygons.hpp"
#include "geometry/region_text.hpp"
#include "mgpr/error.hpp"
#include "tasks/task_factories.hpp"
#include "writers/polygonize.hpp"
#include "writers/segment_mosaic.hpp"

namespace mgpr::runtime {

SegmentPolygons::SegmentPolygons(const OutputPlan& plan) : plan_(plan), files_(plan_, "polygons", fields()) {
  left_out_[kNoClass] = true;
  const int background = plan_.options.background_class;
  if (background >= 0 && background < static_cast<int>(left_out_.size())) {
    left_out_[static_cast<std::size_t>(background)] = true;
  }
  const bool in_map_units = plan_.options.min_area > 0 || plan_.options.simplify > 0;
  for (const auto& raster : plan_.rasters) {
    if (in_map_units && raster.crs_geographic) {
      throw UsageError(fmt::format(
          "raster '{}' is in degrees (a geographic CRS), and min_area={} and simplify={} are in the raster's map "
          "units: an area in square degrees means a different size at every latitude; reproject the raster to a "
          "projected CRS (gdalwarp -t_srs EPSG:<UTM zone> ...), or leave min_area and simplify out",
          raster.path, plan_.options.min_area, plan_.options.simplify));
    }
  }
}

double SegmentPolygons::pixel_area_of(const RasterDescription& raster) {
  const auto t = raster_transform(raster).terms();  // a copy: the transform is a temporary
  return std::abs(t[1] * t[5] - t[2] * t[4]);
}

std::vector<VectorField> SegmentPolygons::fields() const {
  using Type = VectorField::Type;
  using Shown = VectorField::Shown;
  std::vector<VectorField> list{{"raster", Type::kString, Shown::kTableAndRunLayer},
                                {"class", Type::kInteger},
                                {"area", Type::kReal},
                                {"pixels", Type::kInteger},
                                {"score", Type::kReal, Shown::kEverywhere, true}};
  if (named()) list.insert(list.begin() + 2, {"class_name", Type::kString});
  return list;
}

std::string SegmentPolygons::encode(const Tile& tile, const PixelWindow& core, std::span<const std::uint8_t> classes,
                                    std::span<const float> scores) const {
  const auto& raster = plan_.rasters.at(static_cast<std::size_t>(tile.id.image));
  const bool below_top = core.y > 0;
  const bool above_bottom = core.y + core.height < raster.height;
  const bool right_of_left = core.x > 0;
  const bool left_of_right = core.x + core.width < raster.width;
  const auto regions =
      class_regions(classes, scores, core, CoreSeams{below_top, above_bottom, right_of_left, left_of_right}, left_out_);
  const auto polygons = region_polygons(regions.labels, core, regions.regions.size());
  const double area_of_pixel = pixel_area_of(raster);
  std::string text;
  for (std::size_t i = 0; i < regions.regions.size(); ++i) {
    const auto& region = regions.regions[i];
    // A region on no seam is a whole shape: below min_area it is dropped here, as rank 0
    // would drop it, rather than sent (a speckled class raster has millions of them).
    if (region.seams.empty() && static_cast<double>(region.pixels) * area_of_pixel < plan_.options.min_area) continue;
    append_region_text(text, region, polygons[i]);
  }
  return text;
}

std::int64_t SegmentPolygons::add_row(const RasterRow& row, TileResults::const_iterator first,
                                      TileResults::const_iterator last, std::size_t prefix_length,
                                      std::vector<std::filesystem::path>& written) {
  if (!dissolve_ || image_ != row.image) {
    dissolve_.emplace();
    image_ = row.image;
    held_.clear();
  }
  const auto first_handle = next_handle_;
  std::vector<RegionPiece> pieces;
  for (auto at = first; at != last; ++at) {
    const auto text = std::string_view(at->second).substr(std::min(prefix_length, at->second.size()));
    if (!read_region_text(text, pieces)) {
      throw std::runtime_error(
          fmt::format("the polygons of tile row {} column {} of raster '{}' do not read back (a damaged result file in "
                      "output_dir?); run again with resume=false to compute every tile again",
                      at->first.row, at->first.column, plan_.rasters.at(static_cast<std::size_t>(row.image)).path));
    }
  }
  std::vector<RegionDissolve::Region> views;
  views.reserve(pieces.size());
  for (auto& piece : pieces) {
    views.push_back({piece.region.class_value, piece.region.seams});
    held_.emplace(next_handle_++, Piece{piece.region.class_value, piece.region.pixels, piece.region.score_sum,
                                        std::move(piece.polygon)});
  }
  const auto groups = dissolve_->add_row(views, first_handle, row.last);
  const auto& raster = plan_.rasters.at(static_cast<std::size_t>(row.image));
  std::vector<Record> records;
  for (const auto& handles : groups) write_group(raster, handles, records);
  files_.add(row.image, records);
  if (row.last) {
    files_.finish_raster(row.image, written);
    dissolve_.reset();
    held_.clear();
  }
  return static_cast<std::int64_t>(records.size());
}

void SegmentPolygons::write_group(const RasterDescription& raster, std::span<const std::size_t> handles,
                                  std::vector<Record>& out) {
  std::vector<PixelPolygon> pieces;
  std::int64_t pixels = 0;
  double score_sum = 0;
  int class_value = 0;
  for (const auto handle : handles) {
    auto held = held_.extract(handle);
    class_value = held.mapped().class_value;
    pixels += held.mapped().pixels;
    score_sum += held.mapped().score_sum;
    pieces.push_back(std::move(held.mapped().polygon));
  }
  const auto transform = raster_transform(raster);
  const double pixel_size = pixel_area_of(raster);
  const auto& options = plan_.options;
  const double mean_score = static_cast<double>(score_sum) / static_cast<double>(pixels);
  const auto united = unite_polygons(pieces);
  for (const auto& polygon : united) {
    // Pieces that share an edge make one polygon, whose area is its pixels'; parts
    // apart (never seen: regions join only along edges) count their own.
    const double part_pixels = united.size() == 1 ? static_cast<double>(pixels) : pixel_area(polygon);
    const double area = part_pixels * pixel_size;
    if (area < options.min_area) continue;
    Geometry geometry;
    for (const auto& ring : polygon.rings) {
      std::vector<MapPoint> points;
      points.reserve(ring.size());
      for (const auto& point : ring) points.push_back(transform.to_map(point.x, point.y));
      geometry.rings.push_back(std::move(points));
    }
    std::vector<FieldValue> values{raster.path, std::int64_t{class_value}, area,
                                   static_cast<std::int64_t>(std::llround(part_pixels)), mean_score};
    if (named()) values.insert(values.begin() + 2, class_name(options.class_names, class_value));
    out.push_back({simplify_polygon(geometry, options.simplify), std::move(values)});
  }
}

void SegmentPolygons::abandon_raster(int image) {
  files_.abandon_raster(image);
  if (image_ == image) {
    dissolve_.reset();
    held_.clear();
  }
}

void SegmentPolygons::finish(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) {
  files_.finish(outcomes, written);
}

}  // namespace mgpr::runtime
