#include "mgpr/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <toml++/toml.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "config_text.hpp"
#include "config_value_checks.hpp"
#include "foreign_names.hpp"
#include "mgpr/error.hpp"
#include "mgpr/model_card.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/text.hpp"
#include "override_grammar.hpp"

namespace mgpr {
namespace {

// Thread counts beyond any node's cores only thrash (and thousands of threads can hang
// the start); a batch beyond this is a typo that would end in a bare bad_alloc.
constexpr int kMaxThreads = 1024;
constexpr int kMaxBatch = 4096;
// A day: past it a timeout is a typo, not a plan.
constexpr int kMaxTimeout = 86400;

const std::array kKeys{
    ConfigKey{"image_path", &RunConfig::image_path, "rasters to process (also given as positional arguments)"},
    ConfigKey{"image_glob", &RunConfig::image_glob,
              "folders given as inputs: the file names to take, e.g. image_glob='*.tif' (default: raster extensions)"},
    ConfigKey{"recursive", &RunConfig::recursive, "folders given as inputs: also take the rasters of their subfolders"},
    ConfigKey{"bands", &RunConfig::bands, "1-based band numbers fed to the model, e.g. bands=[1,2,3]"},
    ConfigKey{"scale", &RunConfig::scale, "multiplies raw pixel values (0: by data type, 1/255 for uint8)"},
    ConfigKey{"mean", &RunConfig::mean,
              "subtracted after scaling, per band or one for all, e.g. mean=[0.485,0.456,0.406]"},
    ConfigKey{"std", &RunConfig::std, "divides after the mean, per band or one for all, e.g. std=[0.229,0.224,0.225]"},
    ConfigKey{"nodata", &RunConfig::nodata,
              "missing pixels: empty for the raster's own nodata/mask/alpha, none, or a value for every band"},
    ConfigKey{"use_fake_data", &RunConfig::use_fake_data, "serve generated tiles instead of reading rasters"},
    ConfigKey{"dummy_dataset_count", &RunConfig::dummy_dataset_count, "number of fake tiles", {}, 1},
    ConfigKey{"dummy_dataset_delay", &RunConfig::dummy_dataset_delay, "seconds spent producing each fake tile"},
    ConfigKey{"image_size", &RunConfig::image_size, "side in pixels of the raster mgpr-test-image writes", {}, 1},
    ConfigKey{"tile_size", &RunConfig::tile_size, "tile side in pixels", {}, 1},
    ConfigKey{"overlap", &RunConfig::overlap, "minimum overlap between neighbouring tiles, in pixels"},
    ConfigKey{"sharding", &RunConfig::sharding, "how tiles go to ranks", kShardingNames},
    ConfigKey{"gsd", &RunConfig::gsd,
              "ground resolution the model was trained at, metres per pixel (0: unknown; the model card's)"},
    ConfigKey{"gsd_tolerance", &RunConfig::gsd_tolerance,
              "relative difference from gsd up to which a raster is read at its own resolution"},
    ConfigKey{"resample", &RunConfig::resample,
              "read rasters whose resolution differs from gsd resampled to it (false: as they are)"},
    ConfigKey{"resampling", &RunConfig::resampling,
              "how rasters are resampled to gsd (auto: average when coarsening, bilinear when refining)",
              kResamplingNames},
    ConfigKey{"segment_resolution", &RunConfig::segment_resolution,
              "task=segment on resampled rasters: write classes at the model's gsd or back at the raster's",
              kSegmentResolutionNames},
    ConfigKey{"model", &RunConfig::model, "TorchScript file, or builtin:resnet50"},
    ConfigKey{"task", &RunConfig::task, "what the model's output means", kTaskNames},
    ConfigKey{"class_names", &RunConfig::class_names,
              "name of each label value, label 0 first, e.g. class_names=[background,tree] (the model card's)"},
    ConfigKey{"precision", &RunConfig::precision,
              "inference precision (auto: bf16 on CPUs that compute it natively with LibTorch 2.x, else fp32)",
              kPrecisionNames},
    ConfigKey{"batch_size",
              &RunConfig::batch_size,
              "tiles read and sent to the model together (one forward pass on a GPU; see cpu_forward_tiles)",
              {},
              1,
              kMaxBatch},
    ConfigKey{"gpus", &RunConfig::gpus, "ranks to start when run outside Slurm (one per GPU)", {}, 1},
    ConfigKey{"accelerator", &RunConfig::accelerator, "device to run the model on", kAcceleratorNames},
    ConfigKey{"workers", &RunConfig::workers, "reader threads per rank", {}, 1, kMaxThreads},
    ConfigKey{"threads",
              &RunConfig::threads,
              "LibTorch threads per rank (0: the CPUs given to the task)",
              {},
              0,
              kMaxThreads},
    ConfigKey{"rendezvous_timeout",
              &RunConfig::rendezvous_timeout,
              "seconds every rank has to join the others",
              {},
              1,
              kMaxTimeout},
    ConfigKey{"peer_timeout",
              &RunConfig::peer_timeout,
              "seconds a rank waits at a collective for a peer that shows no sign of life (hung, stopped)",
              {},
              1,
              kMaxTimeout},
    ConfigKey{"force_precision", &RunConfig::force_precision,
              "run a precision the device only emulates slowly (bf16 on most CPUs)"},
    ConfigKey{"model_libraries", &RunConfig::model_libraries,
              "shared libraries of custom operators the model needs (e.g. torchvision's), loaded before it"},
    ConfigKey{"channels_last", &RunConfig::channels_last,
              "run the model in channels-last (NHWC): faster on tensor cores, and in oneDNN on a CPU (LibTorch 2.x)"},
    ConfigKey{
        "cudnn_benchmark", &RunConfig::cudnn_benchmark,
        "GPU: let cuDNN time its algorithms on the first batch (off: no gain measured on an H100, 5x the peak memory)"},
    ConfigKey{"cpu_forward_tiles",
              &RunConfig::cpu_forward_tiles,
              "CPU: tiles per forward pass, each batch run as passes of this many (0: about 4 megapixels, at most 8 "
              "tiles: 4 of 1024 px; as fast as the whole batch in a fraction of its memory)",
              {},
              0,
              kMaxBatch},
    ConfigKey{"score_threshold", &RunConfig::score_threshold, "task=detect: drop boxes scoring below this"},
    ConfigKey{"iou_threshold", &RunConfig::iou_threshold,
              "task=detect: IoU at which boxes from overlapping tiles are merged"},
    ConfigKey{"class_aware_nms", &RunConfig::class_aware_nms, "task=detect: only boxes of the same label are merged"},
    ConfigKey{"segment_probability", &RunConfig::segment_probability,
              "task=segment: also write the winning class's probability"},
    ConfigKey{"cog", &RunConfig::cog, "task=segment: also write the mosaic as a Cloud-Optimized GeoTIFF"},
    ConfigKey{"quicklook", &RunConfig::quicklook,
              "write a downsampled PNG of each raster with the results drawn on it"},
    ConfigKey{"quicklook_size", &RunConfig::quicklook_size, "longest side of the quicklook PNG in pixels", {}, 16},
    ConfigKey{
        "outputs", &RunConfig::outputs,
        "result files: per_raster, run (one set for all rasters, with their footprints), auto (run above 8 rasters)",
        kOutputLayoutNames},
    ConfigKey{"resume", &RunConfig::resume,
              "skip the tiles an interrupted run with the same inputs and output_dir finished"},
    ConfigKey{"output_dir", &RunConfig::output_dir, "folder for the results"},
    ConfigKey{"log_interval", &RunConfig::log_interval, "batches between progress lines (0: none)"},
};

template <class T>
constexpr std::string_view kind_name() {
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_same_v<T, int>) return "a whole number";
  if constexpr (std::is_same_v<T, double>) return "a number";
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
  if constexpr (std::is_same_v<T, std::vector<int>>) return "a list of whole numbers";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_key(std::string_view key, std::string_view where) {
  if (const auto foreign = foreign_key(key)) {
    throw UsageError(fmt::format("{}: unknown key '{}'; that is {}'s name, mgpr's is {}", where, key, foreign->origin,
                                 foreign->mgpr_name));
  }
  const auto near = nearest_config_keys(key);
  const std::string hint = near.empty() ? std::string("run with --help to list the keys")
                                        : fmt::format("did you mean {}?", fmt::join(near, ", "));
  throw UsageError(fmt::format("{}: unknown key '{}'; {}", where, key, hint));
}

// Parses one scalar from override text, already trimmed and unquoted by the override
// grammar; nullopt when it does not fit the type.
template <class T>
std::optional<T> parse_scalar(std::string_view text) {
  if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "True" || text == "1" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "False" || text == "0" || text == "no" || text == "off") return false;
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string(text);
  } else {
    return parse_number<T>(text);
  }
}

template <class T>
[[noreturn]] void wrong_type(const ConfigKey& key, std::string_view shown, std::string_view where) {
  throw UsageError(fmt::format("{}: {} must be {}, got {}", where, key.name, kind_name<T>(), shown));
}

template <class T>
T value_from_text(const ConfigKey& key, std::string_view text, std::string_view where) {
  if constexpr (is_list_v<T>) {
    using Item = typename T::value_type;
    T list;
    for (const auto& part : override_grammar::list_items(text, where)) {
      auto item = parse_scalar<Item>(part);
      if (!item) wrong_type<T>(key, fmt::format("'{}'", text), where);
      list.push_back(std::move(*item));
    }
    return list;
  } else {
    auto value = parse_scalar<T>(override_grammar::scalar_text(text, where));
    if (!value) wrong_type<T>(key, fmt::format("'{}'", text), where);
    return std::move(*value);
  }
}

template <class T>
std::optional<T> scalar_from_node(const toml::node& node) {
  if constexpr (std::is_same_v<T, double>) {
    if (node.is_integer()) return static_cast<double>(*node.value<int64_t>());
    if (node.is_floating_point()) return *node.value<double>();
    return std::nullopt;
  } else if constexpr (std::is_same_v<T, int>) {
    if (!node.is_integer()) return std::nullopt;
    const int64_t wide = *node.value<int64_t>();
    if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(wide);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!node.is_boolean()) return std::nullopt;
    return *node.value<bool>();
  } else {
    if (!node.is_string()) return std::nullopt;
    return *node.value<std::string>();
  }
}

template <class T>
T value_from_node(const ConfigKey& key, const toml::node& node, std::string_view where) {
  const auto shown = [&] {
    std::ostringstream out;
    node.visit([&](const auto& value) { out << value; });
    return out.str();
  };
  if constexpr (is_list_v<T>) {
    using Item = typename T::value_type;
    T list;
    if (const auto* array = node.as_array()) {
      for (const auto& element : *array) {
        auto item = scalar_from_node<Item>(element);
        if (!item) wrong_type<T>(key, shown(), where);
        list.push_back(std::move(*item));
      }
    } else if (auto single = scalar_from_node<Item>(node)) {
      list.push_back(std::move(*single));
    } else {
      wrong_type<T>(key, shown(), where);
    }
    return list;
  } else {
    auto value = scalar_from_node<T>(node);
    if (!value) wrong_type<T>(key, shown(), where);
    return std::move(*value);
  }
}

template <class Source>
void set_field(RunConfig& config, const ConfigKey& key, const Source& source, std::string_view where) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(config.*member)>;
        T value;
        if constexpr (std::is_same_v<Source, toml::node>) {
          value = value_from_node<T>(key, source, where);
        } else {
          value = value_from_text<T>(key, source, where);
        }
        check_value(key, value, where);
        config.*member = std::move(value);
      },
      key.field);
}

}  // namespace

std::span<const ConfigKey> config_keys() { return kKeys; }

const ConfigKey* find_config_key(std::string_view name) {
  const auto it = std::find_if(kKeys.begin(), kKeys.end(), [&](const ConfigKey& key) { return key.name == name; });
  return it == kKeys.end() ? nullptr : &*it;
}

std::vector<std::string_view> nearest_config_keys(std::string_view name) {
  std::vector<std::pair<std::size_t, std::string_view>> scored;
  const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  for (const auto& key : kKeys) {
    const std::size_t distance = edit_distance(name, key.name);
    const bool shares_word = name.size() >= 4 && key.name.find(name) != std::string_view::npos;
    if (distance <= limit || shares_word) scored.emplace_back(shares_word ? 0 : distance, key.name);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < scored.size() && i < 3; ++i) names.push_back(scored[i].second);
  return names;
}

bool looks_like_override(std::string_view argument) { return override_grammar::looks_like_override(argument); }

void apply_override(RunConfig& config, std::string_view assignment) {
  const std::string where = fmt::format("override '{}'", assignment);
  const auto parsed = override_grammar::parse_override(assignment);
  const auto* key = find_config_key(parsed.key);
  if (key == nullptr) unknown_key(parsed.key, where);
  if (parsed.reset) {
    static const RunConfig defaults;
    std::visit([&](auto member) { config.*member = defaults.*member; }, key->field);
    return;
  }
  set_field(config, *key, parsed.value, where);
}

namespace {

// Every key of `table` into `config`; `where(node)` names the place of a value in messages.
template <class Where>
void apply_toml_table(RunConfig& config, const toml::table& table, const Where& where_of) {
  for (const auto& [name, node] : table) {
    const std::string where = where_of(node);
    const auto* key = find_config_key(name.str());
    if (key == nullptr) {
      if (node.is_table()) {
        throw UsageError(
            fmt::format("{}: sections like [{}] are not used; write the keys at the top level", where, name.str()));
      }
      unknown_key(name.str(), where);
    }
    set_field(config, *key, node, where);
  }
}

}  // namespace

void apply_generated_toml(RunConfig& config, std::string_view toml_text, std::string_view source_name) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& error) {
    throw std::logic_error(fmt::format("{}: generated TOML does not parse: {}", source_name, error.description()));
  }
  apply_toml_table(config, table, [&](const toml::node&) { return std::string(source_name); });
}

void apply_toml_text(RunConfig& config, std::string_view toml_text, std::string_view source_name) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& error) {
    throw UsageError(fmt::format("{}:{}:{}: not valid TOML: {}", source_name, error.source().begin.line,
                                 error.source().begin.column, error.description()));
  }
  apply_toml_table(config, table,
                   [&](const toml::node& node) { return fmt::format("{}:{}", source_name, node.source().begin.line); });
}

void apply_toml_file(RunConfig& config, const std::filesystem::path& file) {
  // Linux opens a folder as if it were an empty file: that would be an empty config.
  std::error_code ignored;
  if (std::filesystem::is_directory(file, ignored)) {
    throw UsageError(fmt::format("config file '{}' is a folder; give --config the TOML file in it", file.string()));
  }
  std::ifstream in(file);
  if (!in) {
    throw UsageError(fmt::format("config file '{}' cannot be read: {}; check the path given to --config", file.string(),
                                 std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  apply_toml_text(config, text.str(), file.string());
}

namespace {

// The config file, then the arguments in order, over `config`.
RunConfig resolve_over(RunConfig config, const std::filesystem::path& config_file,
                       std::span<const std::string> arguments) {
  if (!config_file.empty()) apply_toml_file(config, config_file);
  for (const auto& argument : arguments) {
    if (looks_like_override(argument)) {
      apply_override(config, argument);
    } else {
      config.image_path.push_back(argument);
    }
  }
  return config;
}

}  // namespace

RunConfig resolve_config(const std::filesystem::path& config_file, std::span<const std::string> arguments,
                         std::optional<ModelCard>* card_found) {
  RunConfig config = resolve_over(RunConfig{}, config_file, arguments);
  // The model's card sits under the file and the overrides: once the model is known, the
  // layers are applied again over the card's settings.
  auto card = card_of_model(config.model);
  if (card) {
    RunConfig with_card;
    apply_model_card(with_card, *card);
    config = resolve_over(std::move(with_card), config_file, arguments);
  }
  validate(config);
  if (card_found != nullptr) *card_found = std::move(card);
  return config;
}

}  // namespace mgpr
