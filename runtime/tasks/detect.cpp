// task=detect: boxes per tile → image pixels (clipped, cut ones marked) → journaled;
// rank 0 merges the boxes of overlapping tiles and writes them in map coordinates.
#include <fmt/format.h>

#include <sstream>

#include "geometry/box_merge.hpp"
#include "geometry/georef.hpp"
#include "mgpr/log_layout.hpp"
#include "tasks/detection_parse.hpp"
#include "tasks/task_factories.hpp"
#ifdef MGPR_HAVE_GDAL
#include "writers/quicklook.hpp"
#include "writers/vector_layer.hpp"
#endif

namespace mgpr::runtime {
namespace {

// "x1 y1 x2 y2 score label truncated;" per box; 9 significant digits give a float32
// back exactly, so a journaled box equals a gathered one.
std::string encode(const std::vector<Box>& boxes) {
  std::string text;
  for (const auto& b : boxes) {
    text += fmt::format("{:.9g} {:.9g} {:.9g} {:.9g} {:.9g} {} {};", b.x1, b.y1, b.x2, b.y2, b.score, b.label,
                        b.truncated ? 1 : 0);
  }
  return text;
}

void decode(const TileId& tile, const std::string& payload, std::vector<Box>& into) {
  std::istringstream in(payload);
  std::string item;
  while (std::getline(in, item, ';')) {
    Box box;
    box.tile = tile;
    int truncated = 0;
    if (std::istringstream(item) >> box.x1 >> box.y1 >> box.x2 >> box.y2 >> box.score >> box.label >> truncated) {
      box.truncated = truncated != 0;
      into.push_back(box);
    }
  }
}

class DetectOutput final : public TaskOutput {
 public:
  explicit DetectOutput(const OutputPlan& plan) : plan_(plan) {}

  void check_output(const torch::IValue& output, std::int64_t batch, int /*tile_size*/) const override {
    (void)parse_detections(output, batch, plan_.options.score_threshold, plan_.options.model);
  }

  std::vector<std::string> encode_batch(std::span<const TileData> tiles, const torch::IValue& output) override {
    auto per_tile = parse_detections(output, static_cast<std::int64_t>(tiles.size()), plan_.options.score_threshold,
                                     plan_.options.model);
    std::vector<std::string> encoded;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const auto& tile = tiles[i].tile;
      const auto& raster = plan_.rasters.at(static_cast<std::size_t>(tile.id.image));
      std::vector<Box> placed;
      for (auto& box : per_tile[i]) {
        if (place_in_image(box, tile.window, raster.width, raster.height)) placed.push_back(box);
      }
      encoded.push_back(encode(placed));
    }
    return encoded;
  }

  std::vector<std::filesystem::path> write_outputs(const TileResults& all, const RasterFailures& /*failed*/) override {
    std::vector<std::filesystem::path> written;
    const MergeOptions merge{plan_.options.iou_threshold, 0.5, plan_.options.class_aware_nms};
    for (std::size_t image = 0; image < plan_.rasters.size(); ++image) {
      std::vector<Box> boxes;
      for (const auto& [id, payload] : all) {
        if (id.image == static_cast<int>(image)) decode(id, payload, boxes);
      }
      const auto merged = merge_boxes(boxes, merge);
      write_image(image, merged, written);
    }
    return written;
  }

 private:
  void write_image(std::size_t image, const std::vector<Box>& boxes, std::vector<std::filesystem::path>& written) {
    const auto& raster = plan_.rasters[image];
    const auto transform = raster_transform(raster);
    const auto prefix = plan_.prefixes[image].string();
    std::filesystem::create_directories(plan_.prefixes[image].parent_path());
    std::string csv =
        "raster,label,score,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2,center_x,center_y,tile_row,"
        "tile_column\n";
    for (const auto& b : boxes) {
      const auto corner1 = transform.to_map(b.x1, b.y1);
      const auto corner2 = transform.to_map(b.x2, b.y2);
      const auto centre = transform.to_map((b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2);
      csv += fmt::format("{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{},{},{},{},{}\n", csv_field(raster.path),
                         b.label, b.score, b.x1, b.y1, b.x2, b.y2, corner1.x, corner1.y, corner2.x, corner2.y, centre.x,
                         centre.y, b.tile.row, b.tile.column);
    }
    write_file_atomically(prefix + "_detections.csv", csv);
    written.emplace_back(prefix + "_detections.csv");
#ifdef MGPR_HAVE_GDAL
    using Type = VectorField::Type;
    const std::vector<VectorField> fields{{"label", Type::kInteger}, {"score", Type::kReal}, {"x1", Type::kReal},
                                          {"y1", Type::kReal},       {"x2", Type::kReal},    {"y2", Type::kReal}};
    std::vector<PolygonFeature> features;
    for (const auto& b : boxes) {
      features.push_back({transform.footprint(b.x1, b.y1, b.x2, b.y2), {b.label, b.score, b.x1, b.y1, b.x2, b.y2}});
    }
    write_polygon_layer(prefix + "_detections.gpkg", "detections", raster.crs_wkt, fields, features);
    written.emplace_back(prefix + "_detections.gpkg");
    if (plan_.options.quicklook) {
      write_box_quicklook(prefix + "_quicklook.png", {raster.path, raster.bands, plan_.options.quicklook_size}, boxes);
      written.emplace_back(prefix + "_quicklook.png");
    }
#endif
  }

  OutputPlan plan_;
};

}  // namespace

std::unique_ptr<TaskOutput> make_detect_output(const OutputPlan& plan) { return std::make_unique<DetectOutput>(plan); }

}  // namespace mgpr::runtime
