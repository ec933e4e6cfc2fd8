#include "source/missing_pixels.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace mgpr::runtime {

std::optional<double> raster_nodata(GDALDataset& dataset, int band) {
  int has_nodata = 0;
  const double nodata = dataset.GetRasterBand(band)->GetNoDataValue(&has_nodata);
  return has_nodata != 0 ? std::optional(nodata) : std::nullopt;
}

namespace {

// "255 in all bands", "0, 0, 255 in bands 1, 2, 3 at once", "-9999" (one band).
std::string nodata_in_all_bands(const std::vector<double>& values, const std::vector<int>& bands) {
  if (values.size() == 1) return fmt::format("nodata {}", values.front());
  if (std::all_of(values.begin(), values.end(), [&](double value) { return value == values.front(); })) {
    return fmt::format("nodata {} in all bands", values.front());
  }
  return fmt::format("nodata {} in bands {} at once", fmt::join(values, ", "), fmt::join(bands, ", "));
}

// The band GDAL takes for the alpha of `band`'s mask: the last one interpreted as alpha.
int alpha_band(GDALDataset& dataset) {
  for (int band = dataset.GetRasterCount(); band >= 1; --band) {
    if (dataset.GetRasterBand(band)->GetColorInterpretation() == GCI_AlphaBand) return band;
  }
  return dataset.GetRasterCount();
}

// What the raster's own rule masks and how it says so; the plan's bands get their nodata
// values under kNodataInAllBands.
std::string plan_raster_rule(GDALDataset& dataset, const RasterDescription& description, RasterReadPlan& plan) {
  auto* first = dataset.GetRasterBand(description.bands.front());
  const int flags = first->GetMaskFlags();
  if ((flags & GMF_ALL_VALID) != 0) return {};
  if ((flags & GMF_PER_DATASET) != 0) {
    // One mask for every band: read as it is (0 missing, anything else data).
    plan.missing = MissingPixels::kMaskBand;
    if ((flags & GMF_ALPHA) != 0) return fmt::format("alpha band {}", alpha_band(dataset));
    if ((flags & GMF_NODATA) != 0) {
      const char* values = dataset.GetMetadataItem("NODATA_VALUES");
      return fmt::format("nodata values {} in all bands at once", values != nullptr ? values : "(per dataset)");
    }
    // A remote path names no local file, so this finds nothing for it.
    std::error_code error;
    const auto mask_file = description.path + ".msk";
    if (std::filesystem::exists(mask_file, error)) return fmt::format("mask file '{}'", mask_file);
    return "internal mask";
  }
  if ((flags & GMF_NODATA) == 0) {  // a driver's own mask of this band alone
    plan.missing = MissingPixels::kMaskBand;
    return fmt::format("mask band of band {}", description.bands.front());
  }
  // Not GDAL's nodata mask band, which masks a pixel when this band alone holds its
  // value: a pixel of an RGB photograph is missing only when every band holds its value.
  std::vector<double> values;
  for (std::size_t i = 0; i < description.bands.size(); ++i) {
    const int band = description.bands[i];
    const auto nodata = raster_nodata(dataset, band);
    if (!nodata) return fmt::format("none (band {} has no nodata value, so no pixel is nodata in all bands)", band);
    if (std::isnan(*nodata)) return {};  // NaN is missing in any band anyway
    if (!buffer_can_hold(plan.buffer_type, *nodata)) {
      return fmt::format("none (nodata {} of band {} is no {} value)", *nodata, band, description.data_type);
    }
    values.push_back(*nodata);
    plan.bands[i].nodata = nodata;
  }
  plan.missing = MissingPixels::kNodataInAllBands;
  return nodata_in_all_bands(values, description.bands);
}

}  // namespace

void plan_missing_pixels(GDALDataset& dataset, const NodataRule& rule, bool floating, RasterDescription& description,
                         RasterReadPlan& plan) {
  std::string said;
  switch (rule.kind) {
    case NodataRule::Kind::kRaster:
      said = plan_raster_rule(dataset, description, plan);
      break;
    case NodataRule::Kind::kNone:
      said = "none (nodata=none)";
      break;
    case NodataRule::Kind::kValue:
      if (std::isnan(rule.value)) {
        said = "none (nodata=nan)";  // NaN pixels are missing anyway
      } else if (!buffer_can_hold(plan.buffer_type, rule.value)) {
        said = fmt::format("none (nodata={} is no {} value)", rule.value, description.data_type);
      } else {
        plan.missing = MissingPixels::kNodataInAllBands;
        for (auto& band : plan.bands) band.nodata = rule.value;
        said = fmt::format("nodata={} in all bands", rule.value);
      }
      break;
  }
  if (floating) said = said.empty() ? "NaN in any band" : said + "; NaN in any band";
  description.missing_pixels = said.empty() ? "none" : said;
  plan.may_have_invalid_pixels = floating || plan.missing != MissingPixels::kNone;
}

}  // namespace mgpr::runtime
