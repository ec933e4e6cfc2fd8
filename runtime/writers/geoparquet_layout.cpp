#include "writers/geoparquet_layout.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

namespace mgpr::runtime::output {
namespace {

using Json = nlohmann::ordered_json;

void put_u32(std::string& out, std::uint32_t value) {
  static_assert(std::endian::native == std::endian::little, "WKB is written little-endian as the machine is");
  char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  out.append(bytes, sizeof value);
}

void put_f64(std::string& out, double value) {
  char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  out.append(bytes, sizeof value);
}

// The index of (x, y) on a Hilbert curve over a 2^16 x 2^16 grid.
std::uint64_t hilbert_index(std::uint32_t x, std::uint32_t y) {
  constexpr std::uint32_t kSide = 1U << 16;
  std::uint64_t index = 0;
  for (std::uint32_t half = kSide / 2; half > 0; half /= 2) {
    const std::uint32_t rx = (x & half) != 0 ? 1 : 0;
    const std::uint32_t ry = (y & half) != 0 ? 1 : 0;
    index += static_cast<std::uint64_t>(half) * half * ((3 * rx) ^ ry);
    if (ry == 0) {  // rotate the quadrant so the curve runs on
      if (rx == 1) {
        x = kSide - 1 - x;
        y = kSide - 1 - y;
      }
      std::swap(x, y);
    }
  }
  return index;
}

Json box_json(const Bounds& box) { return Json::array({box.xmin, box.ymin, box.xmax, box.ymax}); }

}  // namespace

void Bounds::add(const Bounds& other) {
  xmin = std::min(xmin, other.xmin);
  ymin = std::min(ymin, other.ymin);
  xmax = std::max(xmax, other.xmax);
  ymax = std::max(ymax, other.ymax);
}

Bounds bounds_of(const Geometry& geometry) {
  Bounds box;
  for (const auto& ring : geometry.rings) {
    for (const auto& point : ring) box.add({point.x, point.y, point.x, point.y});
  }
  return box;
}

std::string polygon_wkb(const Geometry& geometry) {
  std::string wkb;
  wkb.push_back(1);  // little-endian
  put_u32(wkb, 3);   // Polygon
  std::uint32_t rings = 0;
  for (const auto& ring : geometry.rings) rings += ring.empty() ? 0 : 1;
  put_u32(wkb, rings);
  for (const auto& ring : geometry.rings) {
    if (ring.empty()) continue;
    const bool closed = ring.front().x == ring.back().x && ring.front().y == ring.back().y && ring.size() > 1;
    put_u32(wkb, static_cast<std::uint32_t>(ring.size() + (closed ? 0 : 1)));
    for (const auto& point : ring) {
      put_f64(wkb, point.x);
      put_f64(wkb, point.y);
    }
    if (!closed) {
      put_f64(wkb, ring.front().x);
      put_f64(wkb, ring.front().y);
    }
  }
  return wkb;
}

std::vector<std::size_t> hilbert_order(std::span<const Bounds> boxes) {
  Bounds extent;
  for (const auto& box : boxes) {
    if (!box.empty()) extent.add(box);
  }
  std::vector<std::uint64_t> keys(boxes.size(), 0);
  if (!extent.empty()) {
    const double width = std::max(extent.xmax - extent.xmin, 1e-300);
    const double height = std::max(extent.ymax - extent.ymin, 1e-300);
    constexpr double kLast = (1U << 16) - 1;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      if (boxes[i].empty()) continue;
      const double cx = ((boxes[i].xmin + boxes[i].xmax) / 2 - extent.xmin) / width;
      const double cy = ((boxes[i].ymin + boxes[i].ymax) / 2 - extent.ymin) / height;
      keys[i] = hilbert_index(static_cast<std::uint32_t>(std::clamp(cx, 0.0, 1.0) * kLast),
                              static_cast<std::uint32_t>(std::clamp(cy, 0.0, 1.0) * kLast));
    }
  }
  std::vector<std::size_t> order(boxes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&keys](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  return order;
}

std::string geo_metadata(const std::string& projjson, const Bounds& bbox) {
  Json column{{"encoding", "WKB"}, {"geometry_types", Json::array({"Polygon"})}};
  column["crs"] = projjson.empty() ? Json(nullptr) : Json::parse(projjson);
  if (!bbox.empty()) column["bbox"] = box_json(bbox);
  column["covering"] = {{"bbox",
                         {{"xmin", {"bbox", "xmin"}},
                          {"ymin", {"bbox", "ymin"}},
                          {"xmax", {"bbox", "xmax"}},
                          {"ymax", {"bbox", "ymax"}}}}};
  const Json geo{{"version", "1.1.0"}, {"primary_column", "geometry"}, {"columns", {{"geometry", column}}}};
  return geo.dump();
}

std::string manifest_json(std::span<const PartRecord> parts, std::string_view writer,
                          std::span<const std::pair<std::string, std::string>> run_settings) {
  Json listed = Json::array();
  std::int64_t rows = 0;
  Bounds all;
  for (const auto& part : parts) {
    Json entry{{"file", part.file}, {"layer", part.layer}, {"rows", part.rows}};
    entry["bbox"] = part.bbox.empty() ? Json(nullptr) : box_json(part.bbox);
    entry["sha256"] = part.sha256;
    listed.push_back(std::move(entry));
    rows += part.rows;
    if (!part.bbox.empty()) all.add(part.bbox);
  }
  Json manifest{
      {"format", "GeoParquet dataset"}, {"geoparquet_version", "1.1.0"}, {"written_by", writer}, {"rows", rows}};
  manifest["bbox"] = all.empty() ? Json(nullptr) : box_json(all);
  Json settings = Json::object();
  for (const auto& [name, value] : run_settings) settings[name] = value;
  manifest["run_settings"] = std::move(settings);
  manifest["parts"] = std::move(listed);
  return manifest.dump(2) + "\n";
}

}  // namespace mgpr::runtime::output
