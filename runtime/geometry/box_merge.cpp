#include "geometry/box_merge.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace mgpr::runtime {

double area(const Box& box) { return std::max(0.0, box.x2 - box.x1) * std::max(0.0, box.y2 - box.y1); }

double intersection_area(const Box& a, const Box& b) {
  const double width = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const double height = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  return std::max(0.0, width) * std::max(0.0, height);
}

double iou(const Box& a, const Box& b) {
  const double overlap = intersection_area(a, b);
  const double united = area(a) + area(b) - overlap;
  return united > 0 ? overlap / united : 0.0;
}

bool place_in_image(Box& box, const PixelWindow& window, int image_width, int image_height, double edge_tolerance) {
  const double left = std::max(window.x, 0);
  const double top = std::max(window.y, 0);
  const double right = std::min(window.x + window.width, image_width);
  const double bottom = std::min(window.y + window.height, image_height);
  box.x1 = std::max(box.x1 + window.x, left);
  box.y1 = std::max(box.y1 + window.y, top);
  box.x2 = std::min(box.x2 + window.x, right);
  box.y2 = std::min(box.y2 + window.y, bottom);
  // Written so that NaN coordinates count as empty too.
  if (!(box.x2 > box.x1) || !(box.y2 > box.y1)) return false;
  // Only a window edge inside the image can cut an object; the image's own edges
  // (and the padding beyond a small image) cannot hide a rest of it.
  box.truncated =
      (left > 0 && box.x1 <= left + edge_tolerance) || (right < image_width && box.x2 >= right - edge_tolerance) ||
      (top > 0 && box.y1 <= top + edge_tolerance) || (bottom < image_height && box.y2 >= bottom - edge_tolerance);
  return true;
}

namespace {

// Merge rank: whole boxes first, then higher scores; the remaining fields only break
// ties, so that the rank is a total order and no input order can change the result.
bool ranks_before(const Box& a, const Box& b) {
  return std::tie(a.truncated, b.score, a.x1, a.y1, a.x2, a.y2, a.label, a.tile) <
         std::tie(b.truncated, a.score, b.x1, b.y1, b.x2, b.y2, b.label, b.tile);
}

bool output_before(const Box& a, const Box& b) {
  return std::tie(a.y1, a.x1, a.y2, a.x2, a.label, a.score, a.truncated, a.tile) <
         std::tie(b.y1, b.x1, b.y2, b.x2, b.label, b.score, b.truncated, b.tile);
}

bool suppresses(const Box& kept, const Box& candidate, const MergeOptions& options) {
  if (options.class_aware && kept.label != candidate.label) return false;
  if (iou(kept, candidate) >= options.iou_threshold) return true;
  // Containment is for a fragment cut by a tile edge whose object another tile holds
  // whole. Against a box of its own tile it would drop a distinct object: the model saw
  // both in one view and kept both (a cut object next to a larger one vanished).
  if (!candidate.truncated || candidate.tile == kept.tile) return false;
  const double own = area(candidate);
  return own > 0 && intersection_area(kept, candidate) / own >= options.containment_threshold;
}

// Kept boxes bucketed on a uniform grid. With both thresholds above zero only
// intersecting boxes can suppress each other, so a candidate needs checking only against
// the kept boxes sharing a cell with it, instead of against all of them.
class KeptGrid {
 public:
  explicit KeptGrid(std::span<const Box> boxes) {
    double max_x = boxes.front().x2;
    double max_y = boxes.front().y2;
    std::vector<double> sides;
    sides.reserve(boxes.size());
    origin_x_ = boxes.front().x1;
    origin_y_ = boxes.front().y1;
    for (const Box& box : boxes) {
      origin_x_ = std::min(origin_x_, box.x1);
      origin_y_ = std::min(origin_y_, box.y1);
      max_x = std::max(max_x, box.x2);
      max_y = std::max(max_y, box.y2);
      sides.push_back(std::max(box.x2 - box.x1, box.y2 - box.y1));
    }
    // A cell about the size of a typical box puts most boxes in at most 2 x 2 cells. The
    // lower bounds keep the grid at no more than about 12 cells per box, however sparse
    // or elongated the boxes' spread.
    const auto middle = sides.begin() + static_cast<std::ptrdiff_t>(sides.size() / 2);
    std::nth_element(sides.begin(), middle, sides.end());
    const double extent_x = std::max(max_x - origin_x_, 1.0);
    const double extent_y = std::max(max_y - origin_y_, 1.0);
    const double per_box = 4.0 * static_cast<double>(boxes.size());
    cell_ = std::max({*middle, std::sqrt(extent_x * extent_y / per_box), std::max(extent_x, extent_y) / per_box, 1.0});
    columns_ = static_cast<int>(extent_x / cell_) + 1;
    rows_ = static_cast<int>(extent_y / cell_) + 1;
    cells_.resize(static_cast<std::size_t>(columns_) * static_cast<std::size_t>(rows_));
  }

  void add(const Box& box) {
    for_cells(box, [&](std::vector<Box>& cell) {
      cell.push_back(box);
      return false;
    });
  }

  // A kept box spanning several cells is checked once per shared cell; harmless.
  bool any_suppresses(const Box& candidate, const MergeOptions& options) {
    return for_cells(candidate, [&](const std::vector<Box>& cell) {
      return std::any_of(cell.begin(), cell.end(),
                         [&](const Box& kept) { return suppresses(kept, candidate, options); });
    });
  }

 private:
  int cell_index(double coordinate, double origin, int count) const {
    return std::clamp(static_cast<int>((coordinate - origin) / cell_), 0, count - 1);
  }

  // Calls `visit` on every cell `box` touches until it returns true.
  template <typename Visit>
  bool for_cells(const Box& box, Visit visit) {
    const int column_end = cell_index(box.x2, origin_x_, columns_);
    const int row_end = cell_index(box.y2, origin_y_, rows_);
    for (int row = cell_index(box.y1, origin_y_, rows_); row <= row_end; ++row) {
      for (int column = cell_index(box.x1, origin_x_, columns_); column <= column_end; ++column) {
        if (visit(cells_[static_cast<std::size_t>(row) * static_cast<std::size_t>(columns_) +
                         static_cast<std::size_t>(column)])) {
          return true;
        }
      }
    }
    return false;
  }

  double origin_x_ = 0;
  double origin_y_ = 0;
  double cell_ = 1;
  int columns_ = 1;
  int rows_ = 1;
  std::vector<std::vector<Box>> cells_;
};

}  // namespace

bool finite(const Box& box) {
  return std::isfinite(box.x1) && std::isfinite(box.y1) && std::isfinite(box.x2) && std::isfinite(box.y2);
}

std::vector<Box> merge_boxes(std::span<const Box> boxes, const MergeOptions& options) {
  std::vector<Box> ranked(boxes.begin(), boxes.end());
  std::sort(ranked.begin(), ranked.end(), ranks_before);
  std::vector<Box> kept;
  // A threshold of zero (or less) lets boxes that do not even touch suppress each
  // other, and non-finite coordinates have no cell: then every pair is checked.
  const bool spatial = !ranked.empty() && options.iou_threshold > 0 && options.containment_threshold > 0 &&
                       std::all_of(ranked.begin(), ranked.end(), finite);
  if (spatial) {
    KeptGrid grid(ranked);
    for (const Box& candidate : ranked) {
      if (grid.any_suppresses(candidate, options)) continue;
      grid.add(candidate);
      kept.push_back(candidate);
    }
  } else {
    for (const Box& candidate : ranked) {
      const bool dropped =
          std::any_of(kept.begin(), kept.end(), [&](const Box& box) { return suppresses(box, candidate, options); });
      if (!dropped) kept.push_back(candidate);
    }
  }
  std::sort(kept.begin(), kept.end(), output_before);
  return kept;
}

}  // namespace mgpr::runtime
