#pragma once
// task=segment with polygons=true (docs/outputs.md): each rank finds the class regions
// of every tile's core (geometry/class_regions.hpp), polygonises them and sends them
// with the tile's result; rank 0 joins the regions that cross seams between tiles, a row
// of tiles at a time (geometry/region_dissolve.hpp), so a shape crossing tiles of several
// ranks is one polygon, and writes each polygon once its shape is final: what it holds
// is the shapes still open along the row being written, never the raster's.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "geometry/region_dissolve.hpp"
#include "tasks/result_files.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

class SegmentPolygons {
 public:
  // Throws UsageError, before any tile is read, for min_area or simplify on a raster in
  // degrees.
  explicit SegmentPolygons(const OutputPlan& plan);

  // Ranks: the regions of one tile's core (`classes` and `scores`, core.width x
  // core.height, row by row; `scores` may be empty), as text of one line.
  [[nodiscard]] std::string encode(const Tile& tile, const PixelWindow& core, std::span<const std::uint8_t> classes,
                                   std::span<const float> scores) const;

  // Rank 0: the regions of the row's tiles ([first, last), every tile of the row; their
  // results as encode made them, after `prefix_length` characters), joined with those
  // held; the polygons that became final are written. Returns how many.
  std::int64_t add_row(const RasterRow& row, TileResults::const_iterator first, TileResults::const_iterator last,
                       std::size_t prefix_length, std::vector<std::filesystem::path>& written);
  void abandon_raster(int image);
  void finish(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written);

 private:
  struct Piece {
    int class_value = 0;
    std::int64_t pixels = 0;
    double score_sum = 0;
    PixelPolygon polygon;
  };
  [[nodiscard]] bool named() const { return !plan_.options.class_names.empty(); }
  [[nodiscard]] std::vector<VectorField> fields() const;
  // A pixel's area in the raster's map units squared.
  [[nodiscard]] static double pixel_area_of(const RasterDescription& raster);
  void write_group(const RasterDescription& raster, std::span<const std::size_t> handles, std::vector<Record>& out);

  const OutputPlan& plan_;
  ResultFiles files_;
  std::array<bool, 256> left_out_{};  // classes that make no polygon
  std::optional<RegionDissolve> dissolve_;
  int image_ = -1;  // the raster dissolve_ is of
  std::size_t next_handle_ = 0;
  std::map<std::size_t, Piece> held_;  // by handle: the pieces of open shapes
};

}  // namespace mgpr::runtime
