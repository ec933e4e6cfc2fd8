#pragma once
// The text a tile's class regions (class_regions.hpp) travel to rank 0 and are journaled
// as, one line: "class pixels score_sum|runs|rings" per region, regions separated by
// ';'; runs "side,line,begin,end" separated by spaces (side t, b, l or r); rings
// separated by ':', each "x,y x,y ..." (closed). Score sums have 17 digits, so a region
// read back from a journal sums as the one sent. Read back from files a crash or a user
// may have left: anything else is refused, never half read.
#include <string>
#include <string_view>
#include <vector>

#include "geometry/class_regions.hpp"

namespace mgpr::runtime {

struct RegionPiece {
  ClassRegion region;
  PixelPolygon polygon;
  bool operator==(const RegionPiece&) const = default;
};

// `region` and its polygon appended to `text`.
void append_region_text(std::string& text, const ClassRegion& region, const PixelPolygon& polygon);

// The regions of `text`, appended to `into`; false (and `into` as it was) when `text` is
// not what append_region_text writes: a class outside 0-255, no pixels, a score sum that
// is not finite, a ring with fewer than four points or not closed.
bool read_region_text(std::string_view text, std::vector<RegionPiece>& into);

}  // namespace mgpr::runtime
