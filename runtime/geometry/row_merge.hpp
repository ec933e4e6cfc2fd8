#pragma once
// The merge of one raster's boxes (box_merge.hpp) a row of tiles at a time, so that a
// large raster's boxes are merged and written while its later rows are still computed,
// and only the boxes near the unfinished rows are held.
//
// Why it is exact: with both thresholds above zero only boxes that overlap (with a
// positive area) can suppress each other, so merge_boxes over a set of boxes is the
// union of merge_boxes over its groups of boxes linked by overlaps. A later tile's boxes
// lie inside its window; every window of a later row starts at or below the next row's
// top. So a group none of whose boxes reaches below that line can gain no box: it is
// final, and merged now it gives what the merge of the whole raster gives it. The other
// groups wait for the next row. Which boxes are final depends only on the rows given,
// never on the order tiles finished in, so the output is the same for any rank count.
// Boxes with non-finite corners, or thresholds of zero, make every box a possible
// neighbour of every other: then everything waits for the last row.
#include <optional>
#include <vector>

#include "geometry/box_merge.hpp"

namespace mgpr::runtime {

class RowMerge {
 public:
  explicit RowMerge(const MergeOptions& options) : options_(options) {}

  // The boxes of the raster's next row of tiles (every tile of it). `next_row_top`: the
  // top (y, in image pixels) of the windows of the rows still to come; nullopt for the
  // last row. Returns the merged boxes that became final, sorted as merge_boxes sorts.
  std::vector<Box> add_row(std::vector<Box> boxes, std::optional<double> next_row_top);

  // Boxes held for the rows to come.
  [[nodiscard]] std::size_t held() const { return held_.size(); }

 private:
  MergeOptions options_;
  std::vector<Box> held_;
  bool all_wait_ = false;  // a box without a place, or thresholds of zero: nothing is final early
};

}  // namespace mgpr::runtime
