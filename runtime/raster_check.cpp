#include "raster_check.hpp"

#include <fmt/format.h>

#include "mgpr/error.hpp"

#ifdef MGPR_HAVE_GDAL
#include <cpl_error.h>
#include <gdal_priv.h>
#include <ogr_spatialref.h>
#endif

namespace mgpr::runtime {

#ifdef MGPR_HAVE_GDAL
std::vector<RasterInfo> check_rasters(const std::vector<std::string>& paths) {
  GDALAllRegister();
  std::vector<RasterInfo> infos;
  for (const auto& path : paths) {
    GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    if (!dataset) {
      throw UsageError(fmt::format("raster '{}' cannot be opened: {}; check the path, or pass "
                                   "use_fake_data=true for an environment check",
                                   path, CPLGetLastErrorMsg()));
    }
    RasterInfo info{path, dataset->GetRasterXSize(), dataset->GetRasterYSize(), dataset->GetRasterCount(), {}};
    if (const auto* srs = dataset->GetSpatialRef()) info.crs_name = srs->GetName() ? srs->GetName() : "";
    infos.push_back(std::move(info));
  }
  return infos;
}
#else
std::vector<RasterInfo> check_rasters(const std::vector<std::string>& paths) {
  if (!paths.empty()) {
    throw UsageError(fmt::format("raster '{}' cannot be read: this mgpr was built without GDAL "
                                 "(MGPR_WITH_GDAL=OFF); use use_fake_data=true or a build with GDAL",
                                 paths.front()));
  }
  return {};
}
#endif

}  // namespace mgpr::runtime
