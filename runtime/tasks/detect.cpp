// task=detect: boxes per tile → image pixels (clipped, cut ones marked) → journaled;
// rank 0 merges the boxes of overlapping tiles and writes them in map coordinates.
#include <fmt/format.h>

#include <optional>
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

  std::vector<std::filesystem::path> write_outputs(const TileResults& all, const RasterFailures& failed) override {
    std::vector<std::filesystem::path> written;
    const MergeOptions merge{plan_.options.iou_threshold, 0.5, plan_.options.class_aware_nms};
    const bool run_layout = plan_.layout == OutputLayout::kRun;
    auto outcomes = raster_outcomes(plan_, all, failed);
    std::string csv = csv_header();
#ifdef MGPR_HAVE_GDAL
    std::optional<RunGeoPackage> gpkg;
    if (run_layout) gpkg.emplace(plan_, "detections", fields());
#endif
    for (std::size_t image = 0; image < plan_.rasters.size(); ++image) {
      // A raster that failed has only some of its results: none are written.
      if (outcomes[image].failed) continue;
      std::vector<Box> boxes;
      const auto [first, last] = results_of(all, static_cast<int>(image));
      for (auto at = first; at != last; ++at) decode(at->first, at->second, boxes);
      const auto merged = merge_boxes(boxes, merge);
      outcomes[image].results = static_cast<std::int64_t>(merged.size());
      if (!run_layout) {
        write_image(image, merged, written);
        continue;
      }
      csv += csv_rows(plan_.rasters[image], merged);
#ifdef MGPR_HAVE_GDAL
      for (auto& feature : features(plan_.rasters[image], merged))
        gpkg->add(static_cast<int>(image), std::move(feature));
#endif
      write_quicklook(image, merged, written);
    }
    if (run_layout) {
      write_run_table(plan_, "detections", csv, written);
#ifdef MGPR_HAVE_GDAL
      gpkg->write_run_file("detections", outcomes, written);
#endif
    }
    return written;
  }

 private:
  // Without class names the files stay as they were before names existed: a
  // `label_name` column of empty values would change every existing output for nothing.
  [[nodiscard]] bool named() const { return !plan_.options.class_names.empty(); }

  [[nodiscard]] std::string csv_header() const {
    return fmt::format(
        "raster,label,{}score,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2,center_x,center_y,tile_row,tile_column\n",
        named() ? "label_name," : "");
  }

  // The CSV rows of one raster's boxes, without the header.
  [[nodiscard]] std::string csv_rows(const RasterDescription& raster, const std::vector<Box>& boxes) const {
    const auto transform = raster_transform(raster);
    std::string csv;
    for (const auto& b : boxes) {
      const auto corner1 = transform.to_map(b.x1, b.y1);
      const auto corner2 = transform.to_map(b.x2, b.y2);
      const auto centre = transform.to_map((b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2);
      const auto name = named() ? "," + csv_field(class_name(plan_.options.class_names, b.label)) : "";
      csv += fmt::format("{},{}{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{},{},{},{},{}\n", csv_field(raster.path),
                         b.label, name, b.score, b.x1, b.y1, b.x2, b.y2, corner1.x, corner1.y, corner2.x, corner2.y,
                         centre.x, centre.y, b.tile.row, b.tile.column);
    }
    return csv;
  }

#ifdef MGPR_HAVE_GDAL
  [[nodiscard]] std::vector<VectorField> fields() const {
    using Type = VectorField::Type;
    std::vector<VectorField> list{{"label", Type::kInteger}, {"score", Type::kReal}, {"x1", Type::kReal},
                                  {"y1", Type::kReal},       {"x2", Type::kReal},    { "y2", Type::kReal }};
    if (named()) list.insert(list.begin() + 1, {"label_name", Type::kString});
    return list;
  }

  [[nodiscard]] std::vector<PolygonFeature> features(const RasterDescription& raster,
                                                     const std::vector<Box>& boxes) const {
    const auto transform = raster_transform(raster);
    std::vector<PolygonFeature> out;
    out.reserve(boxes.size());
    for (const auto& b : boxes) {
      std::vector<FieldValue> values{b.label, b.score, b.x1, b.y1, b.x2, b.y2};
      if (named()) values.insert(values.begin() + 1, class_name(plan_.options.class_names, b.label));
      out.push_back({transform.footprint(b.x1, b.y1, b.x2, b.y2), std::move(values)});
    }
    return out;
  }
#endif

  void write_quicklook(std::size_t image, const std::vector<Box>& boxes, std::vector<std::filesystem::path>& written) {
#ifdef MGPR_HAVE_GDAL
    if (!plan_.options.quicklook) return;
    const auto& raster = plan_.rasters[image];
    const auto file = plan_.prefixes[image].string() + "_quicklook.png";
    std::filesystem::create_directories(plan_.prefixes[image].parent_path());
    write_box_quicklook(file,
                        {raster.path, raster.bands, plan_.options.quicklook_size, raster.width, raster.height,
                         plan_.options.class_names},
                        boxes);
    written.emplace_back(file);
#else
    (void)image;
    (void)boxes;
    (void)written;
#endif
  }

  void write_image(std::size_t image, const std::vector<Box>& boxes, std::vector<std::filesystem::path>& written) {
    const auto& raster = plan_.rasters[image];
    const auto prefix = plan_.prefixes[image].string();
    std::filesystem::create_directories(plan_.prefixes[image].parent_path());
    write_file_atomically(prefix + "_detections.csv", csv_header() + csv_rows(raster, boxes));
    written.emplace_back(prefix + "_detections.csv");
#ifdef MGPR_HAVE_GDAL
    write_polygon_layer(prefix + "_detections.gpkg", "detections", raster.crs_wkt, fields(), features(raster, boxes));
    written.emplace_back(prefix + "_detections.gpkg");
#endif
    write_quicklook(image, boxes, written);
  }

  OutputPlan plan_;
};

}  // namespace

std::unique_ptr<TaskOutput> make_detect_output(const OutputPlan& plan) { return std::make_unique<DetectOutput>(plan); }

}  // namespace mgpr::runtime
