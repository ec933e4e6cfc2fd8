#include "geometry/class_regions.hpp"

#include <algorithm>
#include <cstdlib>

#include "geometry/union_find.hpp"

namespace mgpr::runtime {
namespace {

// A run of one class along a row, left out classes excepted.
struct ClassRun {
  int y = 0;
  int begin = 0;
  int end = 0;
  std::uint8_t class_value = 0;
};

// Labels the 4-connected regions run by run (a union-find over the runs of each row and
// those of the row above that they touch), far fewer steps than pixel by pixel; regions
// are numbered in scan order of their first pixel, and their scores summed in scan order.
void label_regions(std::span<const std::uint8_t> classes, std::span<const float> scores, int width, int height,
                   const std::array<bool, 256>& left_out, CoreRegions& out) {
  std::vector<ClassRun> runs;
  std::vector<std::size_t> row_start(static_cast<std::size_t>(height) + 1, 0);
  for (int y = 0; y < height; ++y) {
    row_start[static_cast<std::size_t>(y)] = runs.size();
    const auto* row = classes.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width);
    int x = 0;
    while (x < width) {
      const auto value = row[x];
      int end = x + 1;
      while (end < width && row[end] == value) ++end;
      if (!left_out[value]) runs.push_back({y, x, end, value});
      x = end;
    }
  }
  row_start[static_cast<std::size_t>(height)] = runs.size();
  UnionFind groups(runs.size());
  for (int y = 1; y < height; ++y) {
    // Runs of one row are in x order and apart: a sweep finds every pair that shares a
    // pixel edge with the row above.
    auto above = row_start[static_cast<std::size_t>(y - 1)];
    const auto above_end = row_start[static_cast<std::size_t>(y)];
    auto here = above_end;
    const auto here_end = row_start[static_cast<std::size_t>(y) + 1];
    while (above < above_end && here < here_end) {
      const auto& a = runs[above];
      const auto& b = runs[here];
      if (a.begin < b.end && b.begin < a.end && a.class_value == b.class_value) {
        groups.join(above, here);
      }
      (a.end < b.end ? above : here) += 1;
    }
  }
  out.labels.assign(classes.size(), 0);
  std::vector<std::int32_t> label_of_root(runs.size(), 0);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto root = groups.find(i);
    auto& label = label_of_root[root];
    if (label == 0) {
      out.regions.push_back({runs[i].class_value, 0, 0, {}});
      label = static_cast<std::int32_t>(out.regions.size());
    }
    const auto& run = runs[i];
    auto& region = out.regions[static_cast<std::size_t>(label - 1)];
    region.pixels += run.end - run.begin;
    const auto first = static_cast<std::size_t>(run.y) * static_cast<std::size_t>(width);
    std::fill(out.labels.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(run.begin)),
              out.labels.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(run.end)), label);
    if (!scores.empty()) {
      for (int x = run.begin; x < run.end; ++x) region.score_sum += scores[first + static_cast<std::size_t>(x)];
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
