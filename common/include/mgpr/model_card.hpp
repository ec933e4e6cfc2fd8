#pragma once
// A model card: what a TorchScript model says of itself, carried inside the model file as
// the extra file `mgpr.json` (Python: torch.jit.save(module, path,
// _extra_files={"mgpr.json": card}); in the zip archive it is `<archive>/extra/mgpr.json`).
// Read here without LibTorch, so the launcher and `mgpr --cfg job` see the same card as
// the run.
//
// The card is a JSON object. Its settings are mgpr's own configuration keys, with the
// same meaning and checks (docs/models.md):
//   task, class_names, bands, scale, mean, std, nodata, tile_size, overlap, gsd,
//   gsd_tolerance, resampling, score_threshold, iou_threshold, class_aware_nms,
//   background_class
// and its description is free-form text:
//   name, version, licence (or license), source, description
// and a detector's limits, as its exporter set them (whole numbers; the run counts the
// tiles that reach the first, where the model itself does not say, docs/models.md):
//   detections_per_img (the most boxes a tile), topk_candidates (a level's candidates)
// plus "mgpr_card": 1, the format's version. Any other key is refused by name, so a
// misspelt setting is not silently ignored. A card's settings are defaults: the config
// file and key=value overrides still beat them.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mgpr {

struct RunConfig;

// The card format this mgpr writes and reads.
inline constexpr int kModelCardVersion = 1;
// The extra file's name inside the TorchScript archive.
inline constexpr const char* kModelCardFile = "mgpr.json";

struct ModelCard {
  std::filesystem::path model_file;  // where it was read from
  std::string name;
  std::string version;
  std::string licence;
  std::string source;
  std::string description;
  std::optional<std::int64_t> detections_per_img;
  std::optional<std::int64_t> topk_candidates;
  std::string settings_toml;              // its settings as TOML, config keys only
  std::vector<std::string> setting_keys;  // the config keys it sets, in the card's order
  std::string json_text;                  // the card as stored

  // "the model card in 'model.pt'", for messages.
  [[nodiscard]] std::string where() const;
  // One line for banners: "DeepForest tree crowns 1.4.0 (MIT), card: task, class_names, ...".
  [[nodiscard]] std::string summary() const;
};

// Parses card text; throws UsageError naming `model_file`, the key and what is wrong.
ModelCard parse_model_card(std::string_view json_text, const std::filesystem::path& model_file);

// The card inside `model_file`, nullopt when the file is no zip archive, holds no card,
// or cannot be read (the model check reports those by name). Throws UsageError for a card
// that is there but broken.
std::optional<ModelCard> read_model_card(const std::filesystem::path& model_file);

// The card of `model` (a file, not builtin:), read as above.
std::optional<ModelCard> card_of_model(std::string_view model);

// Applies the card's settings to `config` (a card under the config file and overrides).
void apply_model_card(RunConfig& config, const ModelCard& card);

}  // namespace mgpr
