#include "crops/crop_classifier_card.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "mgpr/error.hpp"
#include "mgpr/run_choices.hpp"

namespace mgpr::runtime {
namespace {

// The detector's default bands are the raster's first ones: a card naming 1, 2, ... agrees.
bool first_bands(const std::vector<int>& bands) {
  for (std::size_t i = 0; i < bands.size(); ++i) {
    if (bands[i] != static_cast<int>(i) + 1) return false;
  }
  return true;
}

}  // namespace

CropClassifierOptions crop_classifier_from_card(const CropClassifierRequest& request,
                                                const std::optional<CropClassifierCard>& card) {
  const auto& model = request.model;
  const std::string fix =
      "save the classifier with a card giving task=classify, tile_size and class_names (docs/models.md, \"Crop "
      "classifiers\"; scripts/mgpr_export.py cropmodel writes one), or give another classify_model";
  std::error_code error;
  if (!std::filesystem::is_regular_file(model, error)) {
    throw UsageError(
        fmt::format("classify_model={}: no such file; give the TorchScript file of a crop classifier", model));
  }
  if (!card) {
    throw UsageError(fmt::format(
        "classify_model={} has no model card; a crop classifier needs one that says task=classify and its input "
        "side (tile_size), and gives its class names and normalisation: {}",
        model, fix));
  }
  const auto sets = [&](std::string_view key) {
    return std::find(card->setting_keys.begin(), card->setting_keys.end(), key) != card->setting_keys.end();
  };
  if (!sets("task") || card->task != name_of(Task::kClassify)) {
    throw UsageError(fmt::format(
        "classify_model={}: {} says task={}, and a crop classifier is a classification model (one row of class "
        "logits per crop): {}",
        model, card->where, sets("task") ? card->task : "nothing", fix));
  }
  if (!sets("tile_size")) {
    throw UsageError(
        fmt::format("classify_model={}: {} gives no tile_size, the side of the crops the classifier takes: {}", model,
                    card->where, fix));
  }
  const bool same_bands =
      card->bands == request.detector_bands || (request.detector_bands.empty() && first_bands(card->bands));
  if (sets("bands") && !same_bands) {
    throw UsageError(fmt::format(
        "classify_model={}: {} reads bands {} and the detector bands {}; the crops are cut from the detector's "
        "tiles, so both models must read the same bands",
        model, card->where, fmt::join(card->bands, ","), fmt::join(request.detector_bands, ",")));
  }
  // Scale 0 is the data type's (1/255 for 8-bit rasters), which a card's 1/255 means too.
  if (sets("scale") && card->scale != request.detector_scale && card->scale != 0 && request.detector_scale != 0) {
    throw UsageError(fmt::format(
        "classify_model={}: {} scales pixels by {} and the detector by {}; mgpr converts the detector's values "
        "to the classifier's through mean and std only, so both must use one scale",
        model, card->where, card->scale, request.detector_scale));
  }
  CropClassifierOptions options;
  options.model = ModelOptions{model, request.libraries, card->tile_size, card->where, {}};
  options.margin = request.margin;
  options.class_names = card->class_names;
  options.detector_mean = request.detector_mean;
  options.detector_std = request.detector_std;
  options.mean = card->mean;
  options.std = card->std;
  return options;
}

}  // namespace mgpr::runtime
