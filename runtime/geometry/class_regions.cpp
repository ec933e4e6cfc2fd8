#include "geometry/class_regions.hpp"

#include <cstdlib>

namespace mgpr::runtime {
namespace {

// Labels the 4-connected regions with an explicit stack: a region as large as the core
// would overflow a recursive fill's call stack.
void label_regions(std::span<const std::uint8_t> classes, std::span<const float> scores, int width, int height,
                   const std::array<bool, 256>& left_out, CoreRegions& out) {
  out.labels.assign(classes.size(), 0);
  std::vector<std::int32_t> stack;
  for (std::size_t start = 0; start < classes.size(); ++start) {
    if (out.labels[start] != 0 || left_out[classes[start]]) continue;
    const auto label = static_cast<std::int32_t>(out.regions.size() + 1);
    ClassRegion region;
    region.class_value = classes[start];
    out.labels[start] = label;
    stack.assign(1, static_cast<std::int32_t>(start));
    while (!stack.empty()) {
      const auto at = static_cast<std::size_t>(stack.back());
      stack.pop_back();
      ++region.pixels;
      const int x = static_cast<int>(at % static_cast<std::size_t>(width));
      const int y = static_cast<int>(at / static_cast<std::size_t>(width));
      const auto visit = [&](int nx, int ny) {
        if (nx < 0 || ny < 0 || nx >= width || ny >= height) return;
        const auto next = static_cast<std::size_t>(ny) * static_cast<std::size_t>(width) + static_cast<std::size_t>(nx);
        if (out.labels[next] != 0 || classes[next] != region.class_value) return;
        out.labels[next] = label;
        stack.push_back(static_cast<std::int32_t>(next));
      };
      visit(x - 1, y);
      visit(x + 1, y);
      visit(x, y - 1);
      visit(x, y + 1);
    }
    out.regions.push_back(std::move(region));
  }
  // Sums in scan order, not fill order: the order a region's scores are added in is then
  // the pixels', whatever shape the fill took.
  if (!scores.empty()) {
    for (std::size_t at = 0; at < classes.size(); ++at) {
      if (out.labels[at] != 0) out.regions[static_cast<std::size_t>(out.labels[at] - 1)].score_sum += scores[at];
    }
  }
}

// The runs of equal labels along one side: `count` pixels, the i-th at labels[first + i * step].
void add_runs(CoreRegions& out, SeamRun::Side side, int line, int origin, std::size_t first, std::size_t step,
              int count) {
  int i = 0;
  while (i < count) {
    const auto label = out.labels[first + static_cast<std::size_t>(i) * step];
    int j = i + 1;
    while (j < count && out.labels[first + static_cast<std::size_t>(j) * step] == label) ++j;
    if (label != 0)
      out.regions[static_cast<std::size_t>(label - 1)].seams.push_back({side, line, origin + i, origin + j});
    i = j;
  }
}

}  // namespace

CoreRegions class_regions(std::span<const std::uint8_t> classes, std::span<const float> scores, const PixelWindow& core,
                          const CoreSeams& seams, const std::array<bool, 256>& left_out) {
  CoreRegions out;
  const int width = core.width;
  const int height = core.height;
  if (width <= 0 || height <= 0) return out;
  label_regions(classes, scores, width, height, left_out, out);
  const auto w = static_cast<std::size_t>(width);
  const auto last_row = static_cast<std::size_t>(height - 1) * w;
  using Side = SeamRun::Side;
  if (seams.top) add_runs(out, Side::kTop, core.y, core.x, 0, 1, width);
  if (seams.bottom) add_runs(out, Side::kBottom, core.y + height, core.x, last_row, 1, width);
  if (seams.left) add_runs(out, Side::kLeft, core.x, core.y, 0, w, height);
  if (seams.right) add_runs(out, Side::kRight, core.x + width, core.y, w - 1, w, height);
  return out;
}

std::int64_t twice_area(const PixelRing& ring) {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i + 1 < ring.size(); ++i) {
    sum += static_cast<std::int64_t>(ring[i].x) * ring[i + 1].y - static_cast<std::int64_t>(ring[i + 1].x) * ring[i].y;
  }
  return sum;
}

double pixel_area(const PixelPolygon& polygon) {
  std::int64_t twice = 0;
  for (std::size_t r = 0; r < polygon.rings.size(); ++r) {
    const auto ring = std::llabs(twice_area(polygon.rings[r]));
    twice += r == 0 ? ring : -ring;
  }
  return static_cast<double>(twice) / 2;
}

PixelRing without_collinear_points(const PixelRing& ring) {
  // Open the ring, drop every point between two neighbours on its line, close it again.
  PixelRing open(ring.begin(), ring.end());
  if (open.size() > 1 && open.front() == open.back()) open.pop_back();
  const auto collinear = [](PixelPoint a, PixelPoint b, PixelPoint c) {
    return static_cast<std::int64_t>(b.x - a.x) * (c.y - a.y) == static_cast<std::int64_t>(b.y - a.y) * (c.x - a.x);
  };
  bool removed = true;
  while (removed && open.size() > 3) {
    removed = false;
    PixelRing kept;
    kept.reserve(open.size());
    const auto n = open.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& before = kept.empty() ? open[(i + n - 1) % n] : kept.back();
      if (collinear(before, open[i], open[(i + 1) % n])) {
        removed = true;
        continue;
      }
      kept.push_back(open[i]);
    }
    open = std::move(kept);
  }
  if (!open.empty()) open.push_back(open.front());
  return open;
}

}  // namespace mgpr::runtime
