#include "tasks/segment_polygons.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "mgpr/error.hpp"
#include "tasks/task_factories.hpp"
#include "writers/polygonize.hpp"
#include "writers/segment_mosaic.hpp"

namespace mgpr::runtime {
namespace {

// A tile's regions as text: "class pixels score_sum|runs|rings" per region, regions
// separated by ';'; runs "side,line,begin,end" separated by spaces (side t, b, l or r);
// rings separated by ':', each "x,y x,y ..." (closed). Score sums with 17 digits, so a
// region read back from a journal sums as the one sent.
constexpr std::string_view kSides = "tblr";

void append_region(std::string& text, const ClassRegion& region, const PixelPolygon& polygon) {
  if (!text.empty()) text += ';';
  text += fmt::format("{} {} {:.17g}|", region.class_value, region.pixels, region.score_sum);
  for (std::size_t i = 0; i < region.seams.size(); ++i) {
    const auto& run = region.seams[i];
    text += fmt::format("{}{},{},{},{}", i == 0 ? "" : " ", kSides[static_cast<std::size_t>(run.side)], run.line,
                        run.begin, run.end);
  }
  text += '|';
  for (std::size_t r = 0; r < polygon.rings.size(); ++r) {
    if (r != 0) text += ':';
    for (std::size_t p = 0; p < polygon.rings[r].size(); ++p) {
      text += fmt::format("{}{},{}", p == 0 ? "" : " ", polygon.rings[r][p].x, polygon.rings[r][p].y);
    }
  }
}

// Reads what append_region wrote; false for anything else.
class RegionReader {
 public:
  explicit RegionReader(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

  bool read(ClassRegion& region, PixelPolygon& polygon) {
    if (!number(region.class_value) || !skip(' ') || !number(region.pixels) || !skip(' ') ||
        !number(region.score_sum) || !skip('|')) {
      return false;
    }
    while (at_ < end_ && *at_ != '|') {
      SeamRun run;
      const auto side = kSides.find(*at_);
      if (side == std::string_view::npos) return false;
      ++at_;
      run.side = static_cast<SeamRun::Side>(side);
      if (!skip(',') || !number(run.line) || !skip(',') || !number(run.begin) || !skip(',') || !number(run.end))
        return false;
      region.seams.push_back(run);
      if (at_ < end_ && *at_ == ' ') ++at_;
    }
    if (!skip('|')) return false;
    polygon.rings.emplace_back();
    while (at_ < end_ && *at_ != ';') {
      PixelPoint point;
      if (!number(point.x) || !skip(',') || !number(point.y)) return false;
      polygon.rings.back().push_back(point);
      if (at_ < end_ && *at_ == ' ') ++at_;
      if (at_ < end_ && *at_ == ':') {
        ++at_;
        polygon.rings.emplace_back();
      }
    }
    for (const auto& ring : polygon.rings) {
      if (ring.size() < 4 || ring.front() != ring.back()) return false;
    }
    return region.pixels > 0 && region.class_value >= 0 && region.class_value < 256 && std::isfinite(region.score_sum);
  }
  // Past the ';' between regions; false at the end.
  bool next() { return at_ < end_ && skip(';'); }
  [[nodiscard]] bool done() const { return at_ == end_; }

 private:
  template <typename Number>
  bool number(Number& value) {
    const auto [stop, error] = std::from_chars(at_, end_, value);
    at_ = stop;
    return error == std::errc();
  }
  bool skip(char wanted) {
    if (at_ == end_ || *at_ != wanted) return false;
    ++at_;
    return true;
  }
  const char* at_;
  const char* end_;
};

}  // namespace

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
  const CoreSeams seams{core.y > 0, core.y + core.height<raster.height, core.x> 0, core.x + core.width < raster.width};
  const auto regions = class_regions(classes, scores, core, seams, left_out_);
  const auto polygons = polygonize_regions(regions.labels, core, regions.regions.size());
  std::string text;
  for (std::size_t i = 0; i < regions.regions.size(); ++i) append_region(text, regions.regions[i], polygons[i]);
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
  std::vector<ClassRegion> regions;
  for (auto at = first; at != last; ++at) {
    const auto text = std::string_view(at->second).substr(std::min(prefix_length, at->second.size()));
    RegionReader reader(text);
    while (!reader.done()) {
      ClassRegion region;
      Piece piece;
      if (!reader.read(region, piece.polygon)) {
        throw std::runtime_error(fmt::format(
            "the polygons of tile row {} column {} of raster '{}' do not read back (a damaged result file in "
            "output_dir?); run again with resume=false to compute every tile again",
            at->first.row, at->first.column, plan_.rasters.at(static_cast<std::size_t>(row.image)).path));
      }
      piece.class_value = region.class_value;
      piece.pixels = region.pixels;
      piece.score_sum = region.score_sum;
      held_.emplace(next_handle_++, std::move(piece));
      regions.push_back(std::move(region));
      if (!reader.next()) break;
    }
  }
  std::vector<RegionDissolve::Region> views;
  views.reserve(regions.size());
  for (const auto& region : regions) views.push_back({region.class_value, region.seams});
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
  const auto& t = transform.terms();
  const double pixel_size = std::abs(t[1] * t[5] - t[2] * t[4]);  // map units² per pixel
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
