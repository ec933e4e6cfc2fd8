#pragma once
// A crop classifier's card against the detector's run, before any raster is read: the
// card must say task=classify and give the classifier's input side (tile_size); its bands
// and scale must be the detector's, since its crops are cut from the detector's tiles.
#include <optional>
#include <string>
#include <vector>

#include "crops/crop_classifier.hpp"

namespace mgpr::runtime {

// What the run asks for (classify_model=, model_libraries=, crop_margin=) and what the
// detector reads, that the classifier's card must agree with.
struct CropClassifierRequest {
  std::string model;
  std::vector<std::string> libraries;
  int margin = 0;
  std::vector<int> detector_bands;
  double detector_scale = 0;
  std::vector<double> detector_mean;
  std::vector<double> detector_std;
};

// The classifier's card as read: where it is (for messages), the keys it sets, and their
// values as the run would take them.
struct CropClassifierCard {
  std::string where;
  std::vector<std::string> setting_keys;
  std::string task;
  int tile_size = 0;
  std::vector<int> bands;
  double scale = 0;
  std::vector<double> mean;
  std::vector<double> std;
  std::vector<std::string> class_names;
};

// The classifier's options; a UsageError names classify_model=, what is wrong and how to
// fix it (no such file, no card, not a classifier, no tile_size, other bands or scale).
CropClassifierOptions crop_classifier_from_card(const CropClassifierRequest& request,
                                                const std::optional<CropClassifierCard>& card);

}  // namespace mgpr::runtime
