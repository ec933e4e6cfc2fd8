#pragma once
// A PNG for a person to look at: the raster downsampled (longest side at most
// `max_side` pixels), with detection boxes outlined or the segmentation mask tinted.
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "geometry/box_merge.hpp"

namespace mgpr::runtime {

struct QuicklookSource {
  std::string raster;      // the input raster
  std::vector<int> bands;  // 1-based; 1 or 3 of them are shown (grey or RGB)
  int max_side = 1024;
  // The pixel grid the boxes or classes are counted in, when it is not the raster's own
  // (a raster read resampled to the model's resolution: the same footprint in other
  // pixels); 0: the raster's.
  int grid_width = 0;
  int grid_height = 0;
  // The name of each label (index = label). Given, a legend in the top-left corner pairs
  // the colour of every label drawn with its number and name; empty, no legend.
  std::vector<std::string> class_names{};
};

// Boxes in the grid's pixel coordinates, outlined in a colour per label.
void write_box_quicklook(const std::filesystem::path& png, const QuicklookSource& source, std::span<const Box> boxes);
// `classes` is a raster of the grid's size (the segmentation VRT); pixels of class > 0
// are tinted, a colour per class; kNoClass pixels are left as they are.
void write_mask_quicklook(const std::filesystem::path& png, const QuicklookSource& source,
                          const std::filesystem::path& classes);

}  // namespace mgpr::runtime
