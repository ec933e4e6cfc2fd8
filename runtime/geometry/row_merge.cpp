#include "geometry/row_merge.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace mgpr::runtime {
namespace {

// Groups of boxes linked by overlaps of positive area, whatever their labels (a coarser
// grouping than the merge needs, so still exact): union-find over the pairs a uniform
// grid of cells about a box's size proposes.
class OverlapGroups {
 public:
  explicit OverlapGroups(const std::vector<Box>& boxes) : parent_(boxes.size()) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
    if (boxes.empty()) return;
    std::vector<double> sides;
    sides.reserve(boxes.size());
    for (const auto& box : boxes) sides.push_back(std::max(box.x2 - box.x1, box.y2 - box.y1));
    const auto middle = sides.begin() + static_cast<std::ptrdiff_t>(sides.size() / 2);
    std::nth_element(sides.begin(), middle, sides.end());
    const double cell = std::max(*middle, 1.0);
    std::unordered_map<std::int64_t, std::vector<std::size_t>> cells;
    const auto key = [](std::int64_t column, std::int64_t row) { return (row << 32) ^ (column & 0xffffffff); };
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      const auto& box = boxes[i];
      const auto column_end = static_cast<std::int64_t>(std::floor(box.x2 / cell));
      const auto row_end = static_cast<std::int64_t>(std::floor(box.y2 / cell));
      for (auto row = static_cast<std::int64_t>(std::floor(box.y1 / cell)); row <= row_end; ++row) {
        for (auto column = static_cast<std::int64_t>(std::floor(box.x1 / cell)); column <= column_end; ++column) {
          auto& members = cells[key(column, row)];
          for (const auto other : members) {
            if (intersection_area(box, boxes[other]) > 0) unite(i, other);
          }
          members.push_back(i);
        }
      }
    }
  }

  std::size_t group_of(std::size_t box) {
    while (parent_[box] != box) box = parent_[box] = parent_[parent_[box]];
    return box;
  }

 private:
  void unite(std::size_t a, std::size_t b) { parent_[group_of(a)] = group_of(b); }

  std::vector<std::size_t> parent_;
};

}  // namespace

std::vector<Box> RowMerge::add_row(std::vector<Box> boxes, std::optional<double> next_row_top) {
  all_wait_ = all_wait_ || options_.iou_threshold <= 0 || options_.containment_threshold <= 0 ||
              !std::all_of(boxes.begin(), boxes.end(), finite);
  held_.insert(held_.end(), std::make_move_iterator(boxes.begin()), std::make_move_iterator(boxes.end()));
  if (!next_row_top) {
    auto merged = merge_boxes(held_, options_);
    held_.clear();
    held_.shrink_to_fit();
    return merged;
  }
  if (all_wait_) return {};
  // A group waits when any of its boxes reaches into the rows to come.
  OverlapGroups groups(held_);
  std::vector<char> waits(held_.size(), 0);
  for (std::size_t i = 0; i < held_.size(); ++i) {
    if (held_[i].y2 > *next_row_top) waits[groups.group_of(i)] = 1;
  }
  std::vector<Box> final_boxes;
  std::vector<Box> still_held;
  for (std::size_t i = 0; i < held_.size(); ++i) {
    (waits[groups.group_of(i)] != 0 ? still_held : final_boxes).push_back(held_[i]);
  }
  held_ = std::move(still_held);
  return merge_boxes(final_boxes, options_);
}

}  // namespace mgpr::runtime
