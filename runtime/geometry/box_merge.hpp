#pragma once
// Detections from overlapping tiles become one box per object. A box that touches a
// tile edge lying inside the image was cut by the tile ("truncated"); the same object
// appears whole in a neighbouring tile when the overlap is at least the object's size.
// Merge rule (docs/outputs.md): boxes are ranked whole-before-truncated, then by score;
// a box is dropped when its IoU with a kept box reaches `iou_threshold`, or when it is
// truncated and at least `containment_threshold` of its own area lies inside a kept box
// from another tile.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "geometry/tiler.hpp"

namespace mgpr::runtime {

// A class a second model gave a box (classify_model=: the crop classifier's), with that
// class's probability; label -1 when the box had no pixel to classify.
struct BoxClass {
  std::int64_t label = -1;
  double score = 0;
  bool operator==(const BoxClass&) const = default;
};

// A box in image pixel coordinates (GDAL's: x right, y down, corners not centres;
// x1 < x2, y1 < y2), with the tile it came from.
struct Box {
  TileId tile;
  double x1 = 0;
  double y1 = 0;
  double x2 = 0;
  double y2 = 0;
  double score = 0;
  std::int64_t label = 0;
  bool truncated = false;
  std::optional<BoxClass> classification{};  // classify_model='s answer; none without a classifier
  bool operator==(const Box&) const = default;
};

struct MergeOptions {
  double iou_threshold = 0.5;
  double containment_threshold = 0.5;
  bool class_aware = true;  // only boxes of the same label suppress each other
};

double area(const Box& box);
double intersection_area(const Box& a, const Box& b);
double iou(const Box& a, const Box& b);
// Whether all four corners are finite numbers (a model can answer NaN or infinity).
bool finite(const Box& box);

// Moves `box` from tile pixels to image pixels, clips it to the tile's window (padding
// of small images is cut away) and to the image, and sets `truncated` when it lies
// within `edge_tolerance` pixels of a window edge that is not an image edge. Returns
// false when nothing of it is left after clipping.
bool place_in_image(Box& box, const PixelWindow& window, int image_width, int image_height,
                    double edge_tolerance = 1.0);

// The merged boxes of one image, in a deterministic order (y1, x1, y2, x2, label,
// score): the same input set in any order gives the same output.
std::vector<Box> merge_boxes(std::span<const Box> boxes, const MergeOptions& options);

}  // namespace mgpr::runtime
