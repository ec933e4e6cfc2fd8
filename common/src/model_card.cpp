#include "mgpr/model_card.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <toml++/toml.h>
#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "zip_member.hpp"

namespace mgpr {
namespace {

// The configuration keys a card may set: what describes the model and its training data.
// Resources, paths and outputs are the run's, not the model's.
constexpr std::array<std::string_view, 16> kCardSettings{"task",
                                                         "class_names",
                                                         "bands",
                                                         "scale",
                                                         "mean",
                                                         "std",
                                                         "nodata",
                                                         "tile_size",
                                                         "overlap",
                                                         "gsd",
                                                         "gsd_tolerance",
                                                         "resampling",
                                                         "score_threshold",
                                                         "iou_threshold",
                                                         "class_aware_nms",
                                                         "background_class"};
// A card is a few hundred bytes; a megabyte is a file that is no card.
constexpr std::uint64_t kMaxCardBytes = std::uint64_t{1} << 20;

using Json = nlohmann::ordered_json;

std::string where_of(const std::filesystem::path& model_file) {
  return fmt::format("the model card in '{}'", model_file.string());
}

[[noreturn]] void refuse(const std::filesystem::path& model_file, std::string_view what) {
  throw UsageError(
      fmt::format("{}: {}; fix the card ({} in the TorchScript file) and save the model again "
                  "(docs/models.md, Model cards)",
                  where_of(model_file), what, kModelCardFile));
}

std::string text_of(const Json& value, std::string_view key, const std::filesystem::path& model_file) {
  if (!value.is_string()) refuse(model_file, fmt::format("{} must be text, got {}", key, value.dump()));
  return value.get<std::string>();
}

void insert_scalar(toml::array& into, const Json& value) {
  // TOML's integers are 64-bit signed: a whole number past them (JSON reads up to 2^64-1)
  // goes on as the number it is, a float, rather than wrapped around to a negative one.
  const bool fits_int64 =
      !value.is_number_unsigned() ||
      value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (value.is_boolean())
    into.push_back(value.get<bool>());
  else if (value.is_number_integer() && fits_int64)
    into.push_back(value.get<std::int64_t>());
  else if (value.is_number())
    into.push_back(value.get<double>());
  else
    into.push_back(value.get<std::string>());
}

bool is_scalar(const Json& value) { return value.is_boolean() || value.is_number() || value.is_string(); }

// `key = value` as TOML, from the card's JSON value.
std::string toml_setting(std::string_view key, const Json& value, const std::filesystem::path& model_file) {
  toml::array holder;
  if (key == "nodata" && value.is_number()) {
    // The configuration holds nodata as text ("", "none" or a number).
    holder.push_back(value.dump());
  } else if (is_scalar(value)) {
    insert_scalar(holder, value);
  } else if (value.is_array()) {
    toml::array items;
    for (const auto& item : value) {
      if (!is_scalar(item)) refuse(model_file, fmt::format("{} must list numbers or text, got {}", key, item.dump()));
      insert_scalar(items, item);
    }
    holder.push_back(std::move(items));
  } else {
    refuse(model_file, fmt::format("{} must be a number, text, true/false or a list, got {}", key, value.dump()));
  }
  std::ostringstream out;
  out << key << " = ";
  holder[0].visit([&](const auto& node) { out << node; });
  return out.str();
}

}  // namespace

std::string ModelCard::where() const { return where_of(model_file); }

std::string ModelCard::summary() const {
  std::string text = name.empty() ? std::string("unnamed model") : name;
  if (!version.empty()) text += " " + version;
  std::vector<std::string> about;
  if (!licence.empty()) about.push_back(licence);
  if (!source.empty()) about.push_back(source);
  if (!about.empty()) text += fmt::format(" ({})", fmt::join(about, "; "));
  text += setting_keys.empty() ? std::string(", no settings") : fmt::format(", sets {}", fmt::join(setting_keys, ", "));
  return text;
}

ModelCard parse_model_card(std::string_view json_text, const std::filesystem::path& model_file) {
  Json card;
  try {
    card = Json::parse(json_text);
  } catch (const Json::exception& error) {
    // parse_error, and out_of_range for a number past a double's range (1e400): both the
    // card's fault, so both named with it.
    const std::string what = error.what();
    refuse(model_file, fmt::format("not valid JSON: {}", what.substr(0, what.find('\n'))));
  }
  if (!card.is_object()) refuse(model_file, "must be a JSON object ({ \"task\": ..., ... })");
  ModelCard parsed;
  parsed.model_file = model_file;
  parsed.json_text = std::string(json_text);
  std::string settings;
  for (const auto& [key, value] : card.items()) {
    if (key == "mgpr_card") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
        refuse(model_file,
               fmt::format("mgpr_card is the card format's version, a whole number from 1; got {}", value.dump()));
      }
      if (value.get<std::int64_t>() > kModelCardVersion) {
        throw UsageError(fmt::format("{}: card format {} is newer than this mgpr reads ({}); upgrade mgpr",
                                     where_of(model_file), value.dump(), kModelCardVersion));
      }
    } else if (key == "name") {
      parsed.name = text_of(value, key, model_file);
    } else if (key == "version") {
      parsed.version = value.is_number() ? value.dump() : text_of(value, key, model_file);
    } else if (key == "licence" || key == "license") {
      parsed.licence = text_of(value, key, model_file);
    } else if (key == "source") {
      parsed.source = text_of(value, key, model_file);
    } else if (key == "description") {
      parsed.description = text_of(value, key, model_file);
    } else if (key == "detections_per_img" || key == "topk_candidates") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
        refuse(model_file,
               fmt::format("{} is a detector's most boxes (a whole number from 1), got {}", key, value.dump()));
      }
      (key == "detections_per_img" ? parsed.detections_per_img : parsed.topk_candidates) = value.get<std::int64_t>();
    } else if (std::find(kCardSettings.begin(), kCardSettings.end(), key) != kCardSettings.end()) {
      if (key == "gsd" && (!value.is_number() || value.get<double>() <= 0)) {
        refuse(model_file, fmt::format("gsd is the model's ground resolution in metres per pixel and must be "
                                       "positive, got {}",
                                       value.dump()));
      }
      settings += toml_setting(key, value, model_file) + '\n';
      parsed.setting_keys.push_back(key);
    } else {
      const std::string hint = find_config_key(key) != nullptr
                                   ? fmt::format(
                                         "{} is the run's choice, not the model's; give it in the config "
                                         "file or as {}=...",
                                         key, key)
                                   : fmt::format(
                                         "a card holds {}, and name, version, licence, source, description, "
                                         "detections_per_img, topk_candidates",
                                         fmt::join(kCardSettings, ", "));
      refuse(model_file, fmt::format("unknown key '{}': {}", key, hint));
    }
  }
  parsed.settings_toml = settings;
  // The settings go through the configuration's own checks now, so a bad value is named
  // with the card, not later as if the user had typed it.
  RunConfig probe;
  apply_model_card(probe, parsed);
  return parsed;
}

std::optional<ModelCard> read_model_card(const std::filesystem::path& model_file) {
  const auto is_card = [](std::string_view name) {
    // <archive>/extra/mgpr.json: PyTorch puts every extra file under extra/ in the
    // archive's one top folder.
    const std::string suffix = fmt::format("/extra/{}", kModelCardFile);
    return name.size() > suffix.size() && name.ends_with(suffix) && name.find('/') == name.size() - suffix.size();
  };
  try {
    const auto member = read_zip_member(model_file, is_card, kMaxCardBytes);
    if (!member) return std::nullopt;
    return parse_model_card(member->content, model_file);
  } catch (const ZipMemberError& error) {
    throw UsageError(
        fmt::format("{}: {} {}; save the model with torch.jit.save(..., _extra_files=...), which "
                    "stores it as it is",
                    where_of(model_file), error.name, error.what));
  }
}

std::optional<ModelCard> card_of_model(std::string_view model) {
  if (model.empty() || model.starts_with("builtin:")) return std::nullopt;
  std::error_code error;
  if (!std::filesystem::is_regular_file(model, error)) return std::nullopt;
  return read_model_card(std::filesystem::path(model));
}

void apply_model_card(RunConfig& config, const ModelCard& card) {
  apply_generated_toml(config, card.settings_toml, card.where());
}

}  // namespace mgpr
