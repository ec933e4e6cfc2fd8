#pragma once
// What rank 0 prints of the run's rasters before the first tile: a line per raster while
// they can be read, one summary of thousands, and on stderr a warning for each raster
// read at a resolution other than the model's (the first few, then a count).
#include <vector>

#include "source/tile_source.hpp"

namespace mgpr::runtime {

void print_rasters(const std::vector<RasterDescription>& rasters);

}  // namespace mgpr::runtime
