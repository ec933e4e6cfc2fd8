#pragma once
// Opens each input once at start-up, so a wrong path or an unreadable file is reported
// by name before any rank starts work.
#include <string>
#include <vector>

namespace mgpr::runtime {

struct RasterInfo {
  std::string path;
  int width = 0;
  int height = 0;
  int bands = 0;
  std::string crs_name;  // empty when the raster has no CRS
};

// Throws UsageError naming the first raster that cannot be opened.
std::vector<RasterInfo> check_rasters(const std::vector<std::string>& paths);

}  // namespace mgpr::runtime
