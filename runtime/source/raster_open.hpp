#pragma once
// Opening one raster by the path the run was given, or a UsageError that says why not
// and how to fix it: a FIFO or device refused before GDAL waits on it forever, a missing
// file or /vsi archive named, a remote failure explained (gdal/remote_reads.hpp), else
// GDAL's own reason.
#include <gdal_priv.h>

#include <string>

namespace mgpr::runtime {

GDALDatasetUniquePtr open_or_explain(const std::string& path);

}  // namespace mgpr::runtime
