#pragma once
// The run configuration shared by `mgpr` and `mgpr-submit`: one schema, one loader.
// Keys of the original Python project keep their names (tile_size, batch_size, gpus,
// use_fake_data, ...) so configs and `key=value` habits carry over unchanged.
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mgpr/model_card.hpp"

namespace mgpr {

struct RunConfig {
  // Inputs
  std::vector<std::string> image_path;  // files, folders, `@list` files, globs, URLs (mgpr/input_list.hpp)
  std::string image_glob;               // folders: the file names taken; empty: the usual raster extensions
  bool recursive = false;               // folders: also their subfolders
  std::vector<int> bands;               // 1-based band numbers; empty: the model's default (first 3)
  // Pixel scaling: value = (raw * scale - mean[band]) / std[band]. scale 0 means by the
  // data type (1/255 for uint8, 1/65535 for uint16, 1/32767 for int16, 1 for float32).
  double scale = 0.0;
  std::vector<double> mean;  // per selected band, or one value for all; empty: 0
  std::vector<double> std;   // per selected band, or one value for all; empty: 1
  // Which pixels are missing: empty (the raster's own nodata values, mask or alpha band),
  // "none" (every pixel is data), or a number (nodata in every selected band).
  std::string nodata;
  bool use_fake_data = false;
  int dummy_dataset_count = 100;
  double dummy_dataset_delay = 0.0;  // seconds per fake tile, to mimic slow storage
  int image_size = 4096;             // side of the raster mgpr-test-image writes
  // Fake tiles' samples: float32, or uint8/uint16 travelling raw as a Byte or UInt16 raster's.
  std::string dummy_dataset_type = "float32";
  // Tiling and sharding
  int tile_size = 1024;
  int overlap = 0;
  std::string sharding = "dynamic";
  // Ground resolution: the model's (metres per pixel, 0 unknown), and what is done when a
  // raster's differs from it by more than the tolerance (relative: 0.1 is 10 %).
  double gsd = 0.0;
  double gsd_tolerance = 0.1;
  bool resample = true;             // read such rasters resampled to the model's gsd
  std::string resampling = "auto";  // GDAL's method; auto: average down, bilinear up
  // task=segment on resampled rasters: the class raster at the model's gsd or the raster's.
  std::string segment_resolution = "model";
  // Model
  std::string model = "builtin:resnet50";
  std::string task = "classify";
  std::vector<std::string> class_names;  // the name of each label value (index = label)
  std::string precision = "auto";        // resolved by the runtime per device
  int batch_size = 4;
  // Resources
  int gpus = 1;
  std::string accelerator = "auto";
  int workers = 2;
  int threads = 0;                           // 0: the CPUs Slurm gave the task
  int rendezvous_timeout = 300;              // seconds every rank has to join the others
  int peer_timeout = 120;                    // seconds a rank waits for a peer that shows no sign of life
  std::string on_rank_loss = "fail";         // a rank other than rank 0 lost mid-run: end the run, or go on
  bool force_precision = false;              // run a precision this device emulates slowly anyway
  std::vector<std::string> model_libraries;  // shared libraries of custom operators, loaded first
  bool channels_last = true;                 // GPU: convolutions in NHWC, the layout tensor cores read natively
  bool cudnn_benchmark = false;              // GPU: cuDNN times its algorithms once (no gain measured, 5x the memory)
  int cpu_forward_tiles = 0;                 // CPU: tiles per forward pass (0: about 4 megapixels, at most 8)
  bool onednn_fusion = false;                // CPU: oneDNN Graph fuses the model (measured: no faster, more memory)
  std::string jit_executor = "auto";         // TorchScript executor; resolved by the runtime per device
  // Results (docs/outputs.md)
  double score_threshold = 0.0;      // detect: boxes scoring below are dropped
  double iou_threshold = 0.5;        // detect: overlap at which duplicate boxes are merged
  bool class_aware_nms = true;       // detect: only boxes of one label suppress each other
  std::string classify_model;        // detect: a classifier (with its card) run on every box's crop
  int crop_margin = 0;               // detect: pixels of context around each box's crop
  bool segment_probability = false;  // segment: also write the winning class's probability
  bool cog = false;                  // segment: also write a Cloud-Optimized GeoTIFF
  bool polygons = false;             // segment: also write the classes as polygons, dissolved across tiles
  int background_class = 0;          // segment: the class left out of the polygons (-1: none)
  double min_area = 0;               // segment: polygons below this area (map units²) are dropped
  double simplify = 0;               // segment: polygons simplified to this tolerance (map units)
  bool quicklook = false;            // a downsampled PNG with the results drawn over the raster
  int quicklook_size = 1024;         // the quicklook's longest side in pixels
  // One result file per raster ("per_raster"), one for the whole run ("run"), or "auto":
  // per raster for up to kPerRasterOutputsUpTo rasters, the run's above.
  std::string outputs = "auto";
  // The vector results' format (gpkg, fgb, geojson, shp, csv, parquet: its file extension; parquet a folder).
  std::string output_format = "gpkg";
  bool resume = true;  // skip tiles a previous, interrupted run of the same job finished
  // Outputs and reporting
  std::string output_dir = "mgpr_output";
  int log_interval = 10;

  bool operator==(const RunConfig&) const = default;
};

using ConfigField = std::variant<bool RunConfig::*, int RunConfig::*, double RunConfig::*, std::string RunConfig::*,
                                 std::vector<std::string> RunConfig::*, std::vector<int> RunConfig::*,
                                 std::vector<double> RunConfig::*>;

// What a key's value does to a tile's result, the one a run journals and a resumed run
// takes over instead of computing it again. The resume fingerprint (runtime/app/
// run_plan.cpp) is made from this declaration, so no key that changes a result can be
// left out of it; a key that declares nothing is refused by tests/unit/config_test.cpp.
enum class TileResultEffect {
  kUndeclared,  // never in the table
  // Leaves it as it is: where the run goes, what it reports, how the final files are made
  // from the journaled results (merging, names, formats); and how a batch is split over
  // threads and passes, up to floating-point rounding, since a requeue may change those
  // (another node's CPUs, a smaller batch after running out of memory) and must keep the
  // finished tiles.
  kKeeps,
  // Changes it: the value as given is in the fingerprint. Also the layouts and kernel
  // choices that change only its rounding (channels_last measured so), rarely changed.
  kChanges,
  // Changes it through what it becomes on the machine, which the fingerprint holds
  // instead: the rasters the inputs expand to, the precision and device `auto` become, a
  // model file's content.
  kResolved,
};

struct ConfigKey {
  std::string_view name;
  ConfigField field;
  TileResultEffect effect = TileResultEffect::kUndeclared;
  std::string_view help;
  std::span<const std::string_view> choices = {};  // allowed values of a string key
  int min_value = 0;                               // smallest allowed value of an int key
  int max_value = 1 << 30;                         // largest; a bound where more cannot work
};

// Every key, in the order --help and the resolved config list them.
std::span<const ConfigKey> config_keys();
// `key`'s value in `config` as plain text, for a record a person reads: lists joined by
// commas, numbers as fmt writes them (100, 0.5), booleans true and false.
std::string config_value_text(const RunConfig& config, const ConfigKey& key);
const ConfigKey* find_config_key(std::string_view name);
// Up to three known keys close to a mistyped one, nearest first.
std::vector<std::string_view> nearest_config_keys(std::string_view name);

// True when the argument is meant as `key=value` rather than a file name: the part
// before '=' looks like a key, optionally after Hydra's '+', '++' or '~' (`~key` alone
// too). A file named `a=b.tif` can be passed as `./a=b.tif`.
bool looks_like_override(std::string_view argument);

// Overrides take Hydra's grammar (common/src/override_grammar.hpp): `bands=[1,2,3]`,
// quoted values, `key=null` and `~key` for the default, `+key=value`.
// Each throws UsageError naming the file or override and the key at fault.
void apply_override(RunConfig& config, std::string_view assignment);
void apply_toml_text(RunConfig& config, std::string_view toml_text, std::string_view source_name);
void apply_toml_file(RunConfig& config, const std::filesystem::path& file);
// TOML the program made (a model card's settings): errors name `source_name`, no line.
void apply_generated_toml(RunConfig& config, std::string_view toml_text, std::string_view source_name);
// The model file's card (mgpr/model_card.hpp) when it has one, then a config file (when
// not empty), then the arguments in order: `key=value` overrides, and anything else as a
// raster appended to image_path. Inside an srun step the plugin started with
// --mgpr-on-rank-loss (MGPR_ON_RANK_LOSS), that value is on_rank_loss unless the file or
// an override sets it; one that sets the other value is refused (UsageError naming both).
// Validates the result. `card_found`, when given, receives the card that was applied.
RunConfig resolve_config(const std::filesystem::path& config_file, std::span<const std::string> arguments,
                         std::optional<ModelCard>* card_found = nullptr);

// The step's on_rank_loss as the plugin exported it (MGPR_ON_RANK_LOSS), checked: nullopt
// when unset, UsageError naming the variable when it is neither fail nor continue.
std::optional<std::string> on_rank_loss_from_environment();

// Checks between keys (overlap < tile_size, ...; the tile bounds of mgpr/tile_limits.hpp);
// throws UsageError.
void validate(const RunConfig& config);

// Hydra's `--cfg job`: the resolved configuration as TOML, each key with where its value
// came from (default, the file and line, the override, the arguments).
std::string describe_resolved_config(const std::filesystem::path& config_file, std::span<const std::string> arguments);

// `mgpr --model-info`: a model file's card, its settings as `key = value` TOML lines (as
// --cfg job writes values), and what mgpr does with them; says so when there is none.
std::string describe_model_card(const std::filesystem::path& model_file, const std::optional<ModelCard>& card);

// The whole configuration as TOML that apply_toml_text reads back to an equal config.
std::string to_toml(const RunConfig& config);
// A human table of the keys, their defaults and help, for --help.
std::string describe_config_keys();

}  // namespace mgpr
