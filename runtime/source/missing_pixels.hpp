#pragma once
// Which pixels of a raster are missing (docs/runtime.md, "Missing pixels"), decided once
// per raster at start-up from the nodata= rule and the raster's own nodata values, mask
// or alpha band; the reader threads then only apply the plan (source/raster_reader.hpp).
#include <gdal_priv.h>

#include <optional>

#include "mgpr/run_choices.hpp"
#include "source/raster_reader.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// The nodata value of `band` (1-based), when it has one.
std::optional<double> raster_nodata(GDALDataset& dataset, int band);

// Decides which pixels are missing (RasterReadPlan::missing, the bands' nodata) under
// `rule`, for a raster whose selected bands are description.bands; `floating`: its type
// is floating-point, so NaN is missing in any band. Says so in
// RasterDescription::missing_pixels.
void plan_missing_pixels(GDALDataset& dataset, const NodataRule& rule, bool floating, RasterDescription& description,
                         RasterReadPlan& plan);

}  // namespace mgpr::runtime
