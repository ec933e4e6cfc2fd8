#pragma once
// The regions of one raster's tile cores (class_regions.hpp) joined across the seams
// between cores, a row of tiles at a time, so that a shape crossing any number of tiles
// comes out as one group, whichever rank computed each tile.
//
// Why a group is final when it is: two regions are one shape when they have the same
// class and runs on the two sides of one seam line that share at least one pixel edge
// (4-connected, as within a core). The row's own seams (between its tiles) and the seam
// above it (with the rows before) are all known once the row is added, so the only runs
// still unmatched are on the row's bottom line. A group none of whose regions has a run
// there can gain no region: it is final. Which groups are final depends only on the rows
// given, never on the order tiles finished in.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/class_regions.hpp"

namespace mgpr::runtime {

class RegionDissolve {
 public:
  struct Region {
    int class_value = 0;
    std::span<const SeamRun> seams;  // read during add_row only
  };

  // The regions of the raster's next row of tiles (every tile of it), numbered by the
  // caller: the first is `first_handle`, the next one more, and so on, every row carrying
  // on from the last. `last_row`: the raster's last row. Returns the groups that became
  // final, each the handles of its regions in increasing order, the groups ordered by
  // their first handle.
  std::vector<std::vector<std::size_t>> add_row(std::span<const Region> regions, std::size_t first_handle,
                                                bool last_row);

  // Regions held for the rows to come.
  [[nodiscard]] std::size_t held() const { return held_.size(); }

 private:
  struct Held {
    std::size_t handle = 0;
    int class_value = 0;
    std::size_t group = 0;        // the same for every held region of one group
    std::vector<SeamRun> bottom;  // its runs on the line below its row, not yet matched
  };
  std::vector<Held> held_;
};

}  // namespace mgpr::runtime
