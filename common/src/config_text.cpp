#include "config_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "mgpr/env_names.hpp"
#include "mgpr/run_choices.hpp"
#include "override_grammar.hpp"

namespace mgpr {
namespace {

// A finite double as a TOML float: the shortest round-trip digits, with a point or an
// exponent so TOML reads a float, not an integer.
std::string toml_float(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

void append_toml_value(std::ostringstream& out, const RunConfig& config, const ConfigKey& key) {
  std::visit(
      [&](auto member) {
        const auto& value = config.*member;
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (is_list_v<T>) {
          toml::array array;
          if constexpr (std::is_same_v<T, std::vector<double>>) {
            // toml++ writes 17 digits (gsd 0.2 as 0.20000000000000001); the shortest
            // text that reads back to the same double is what the user typed.
            std::vector<std::string> items;
            for (const double item : value) items.push_back(toml_float(item));
            out << (items.empty() ? std::string("[]") : fmt::format("[ {} ]", fmt::join(items, ", ")));
            return;
          }
          for (const auto& item : value) {
            if constexpr (std::is_same_v<T, std::vector<int>>) {
              array.push_back(static_cast<std::int64_t>(item));
            } else {
              array.push_back(item);
            }
          }
          out << array;
        } else if constexpr (std::is_same_v<T, int>) {
          out << toml::value<std::int64_t>(value);
        } else if constexpr (std::is_same_v<T, double>) {
          out << toml_float(value);
        } else {
          out << toml::value<T>(value);
        }
      },
      key.field);
}

std::string describe_resolved_config(const std::filesystem::path& config_file, std::span<const std::string> arguments) {
  std::optional<ModelCard> card;
  const RunConfig config = resolve_config(config_file, arguments, &card);
  std::map<std::string, std::string, std::less<>> origin;
  if (card) {
    for (const auto& key : card->setting_keys) origin[key] = fmt::format("model card in {}", card->model_file.string());
  }
  if (on_rank_loss_from_environment()) {
    origin["on_rank_loss"] = fmt::format("environment {} (srun --mgpr-on-rank-loss)", env::kOnRankLoss);
  }
  if (!config_file.empty()) {
    // resolve_config read the file already; this second read only lists its keys.
    std::ifstream in(config_file);
    std::ostringstream text;
    text << in.rdbuf();
    for (const auto& [name, node] : toml::parse(text.str(), config_file.string())) {
      origin[std::string(name.str())] = fmt::format("file {}:{}", config_file.string(), node.source().begin.line);
    }
  }
  for (const auto& argument : arguments) {
    if (looks_like_override(argument)) {
      const auto parsed = override_grammar::parse_override(argument);
      origin[std::string(parsed.key)] =
          parsed.reset ? fmt::format("default, by override '{}'", argument) : fmt::format("override '{}'", argument);
    } else {
      origin["image_path"] = "arguments";
    }
  }
  std::ostringstream out;
  for (const auto& key : config_keys()) {
    out << key.name << " = ";
    append_toml_value(out, config, key);
    const auto found = origin.find(key.name);
    out << "  # " << (found == origin.end() ? std::string("default") : found->second) << '\n';
  }
  return out.str();
}

namespace {

std::string metres(double value) { return fmt::format("{:g} m", value); }

// What mgpr will do with the card's settings, in words; `config` holds them over the defaults.
std::string card_consequences(const RunConfig& config, const ModelCard& card) {
  const auto sets = [&](std::string_view key) {
    return std::find(card.setting_keys.begin(), card.setting_keys.end(), key) != card.setting_keys.end();
  };
  std::string text;
  const auto line = [&](const std::string& said) { text += "  " + said + "\n"; };
  line(fmt::format("task={}{}", config.task, sets("task") ? "" : " (mgpr's default: the card does not say)"));
  if (!config.class_names.empty()) {
    std::vector<std::string> named;
    for (std::size_t label = 0; label < config.class_names.size(); ++label) {
      named.push_back(fmt::format("{} {}", label, config.class_names[label]));
    }
    line(fmt::format("labels are named in the outputs: {}", fmt::join(named, ", ")));
  }
  if (sets("bands")) line(fmt::format("feeds bands {} of each raster", fmt::join(config.bands, ", ")));
  if (sets("scale") || sets("mean") || sets("std")) {
    line(fmt::format("pixels become (raw * {} - mean [{}]) / std [{}]",
                     config.scale == 0 ? std::string("1/type range") : fmt::format("{:g}", config.scale),
                     fmt::join(config.mean, ", "), fmt::join(config.std, ", ")));
  }
  std::string tiles = fmt::format("tiles of {} px, overlap {} px", config.tile_size, config.overlap);
  if (config.gsd > 0) {
    tiles += fmt::format(" ({} and {} on the ground at {} per pixel)", metres(config.tile_size * config.gsd),
                         metres(config.overlap * config.gsd), metres(config.gsd));
  }
  line(tiles);
  if (config.gsd > 0) {
    line(
        fmt::format("rasters whose resolution differs from {} by more than {:g} % are read resampled to it "
                    "(resampling={}{}); resample=false reads them as they are",
                    metres(config.gsd), config.gsd_tolerance * 100, config.resampling,
                    config.resampling == "auto" ? ": average when coarsening, bilinear when refining" : ""));
  } else {
    line("the model's ground resolution is unknown: rasters are read as they are (gsd= sets it)");
  }
  if (config.task == name_of(Task::kDetect)) {
    line(fmt::format("keeps boxes scoring at least {:g}, merges boxes overlapping more than IoU {:g}{}",
                     config.score_threshold, config.iou_threshold, config.class_aware_nms ? " of one label" : ""));
  }
  return text;
}

}  // namespace

std::string describe_model_card(const std::filesystem::path& model_file, const std::optional<ModelCard>& card) {
  std::string text = fmt::format("model: {}\n", model_file.string());
  if (!card) {
    return text + fmt::format(
                      "card: none ({} is not in the file); mgpr's defaults and the run's keys decide everything, and "
                      "the model's ground resolution is unknown\n",
                      kModelCardFile);
  }
  text += fmt::format("card: {} (format {})\n", kModelCardFile, kModelCardVersion);
  const auto field = [&](std::string_view name, const std::string& value) {
    if (!value.empty()) text += fmt::format("{}: {}\n", name, value);
  };
  field("name", card->name);
  field("version", card->version);
  field("licence", card->licence);
  field("source", card->source);
  field("description", card->description);
  if (card->detections_per_img) {
    text += fmt::format(
        "detections_per_img: {} (the most boxes it returns for a tile; tiles that reach it are counted "
        "and named)\n",
        *card->detections_per_img);
  }
  if (card->topk_candidates) text += fmt::format("topk_candidates: {}\n", *card->topk_candidates);
  RunConfig config;
  apply_model_card(config, *card);
  text += "settings (defaults: a config file and key=value overrides beat them):\n";
  for (const auto& name : card->setting_keys) {
    std::ostringstream value;
    append_toml_value(value, config, *find_config_key(name));
    text += fmt::format("{} = {}\n", name, value.str());
  }
  text += "what mgpr does with it:\n" + card_consequences(config, *card);
  return text;
}

std::string to_toml(const RunConfig& config) {
  std::ostringstream out;
  for (const auto& key : config_keys()) {
    out << "# " << key.help << '\n' << key.name << " = ";
    append_toml_value(out, config, key);
    out << '\n';
  }
  return out.str();
}

std::string describe_config_keys() {
  const RunConfig defaults;
  std::string text = "Keys (key=value, or in the --config TOML file):\n";
  for (const auto& key : config_keys()) {
    std::ostringstream value;
    append_toml_value(value, defaults, key);
    std::string help(key.help);
    if (!key.choices.empty()) help += fmt::format(" ({})", fmt::join(key.choices, "|"));
    text += fmt::format("  {:<20} {:<20} {}\n", key.name, value.str(), help);
  }
  return text;
}

}  // namespace mgpr
