// The table of every configuration key: its name, the RunConfig field it fills, what it
// does to a tile's result (which makes the resume fingerprint), its help text, allowed
// names and bounds, and the lookups over it (a key by name, the keys a mistyped name is
// nearest to). Parsing and applying values is config.cpp's.
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/model_card.hpp"
#include "mgpr/run_choices.hpp"

namespace mgpr {
namespace {
// Thread counts beyond any node's cores only thrash (and thousands of threads can hang
// the start); a batch beyond this is a typo that would end in a bare bad_alloc.
constexpr int kMaxThreads = 1024;
constexpr int kMaxBatch = 4096;
// A day: past it a timeout is a typo, not a plan.
constexpr int kMaxTimeout = 86400;

// Each key's effect on a tile's result (mgpr/config.hpp), short so the table stays one.
constexpr auto kKeeps = TileResultEffect::kKeeps;
constexpr auto kChanges = TileResultEffect::kChanges;
constexpr auto kResolved = TileResultEffect::kResolved;

const std::array kKeys{
    ConfigKey{"image_path", &RunConfig::image_path, kResolved,
              "rasters to process (also given as positional arguments)"},
    ConfigKey{"image_glob", &RunConfig::image_glob, kResolved,
              "folders given as inputs: the file names to take, e.g. image_glob='*.tif' (default: raster extensions)"},
    ConfigKey{"recursive", &RunConfig::recursive, kResolved,
              "folders given as inputs: also take the rasters of their subfolders"},
    ConfigKey{"bands", &RunConfig::bands, kChanges, "1-based band numbers fed to the model, e.g. bands=[1,2,3]"},
    ConfigKey{"scale", &RunConfig::scale, kChanges, "multiplies raw pixel values (0: by data type, 1/255 for uint8)"},
    ConfigKey{"mean", &RunConfig::mean, kChanges,
              "subtracted after scaling, per band or one for all, e.g. mean=[0.485,0.456,0.406]"},
    ConfigKey{"std", &RunConfig::std, kChanges,
              "divides after the mean, per band or one for all, e.g. std=[0.229,0.224,0.225]"},
    ConfigKey{"nodata", &RunConfig::nodata, kChanges,
              "missing pixels: empty for the raster's own nodata/mask/alpha, none, or a value for every band"},
    ConfigKey{"use_fake_data", &RunConfig::use_fake_data, kChanges, "serve generated tiles instead of reading rasters"},
    ConfigKey{"dummy_dataset_count", &RunConfig::dummy_dataset_count, kChanges, "number of fake tiles", {}, 1},
    ConfigKey{"dummy_dataset_delay", &RunConfig::dummy_dataset_delay, kKeeps, "seconds spent producing each fake tile"},
    ConfigKey{"dummy_dataset_type", &RunConfig::dummy_dataset_type, kChanges,
              "sample type of the fake tiles (uint8 and uint16 travel raw, as a Byte or UInt16 raster's do)",
              kFakeDataTypeNames},
    ConfigKey{
        "image_size", &RunConfig::image_size, kKeeps, "side in pixels of the raster mgpr-test-image writes", {}, 1},
    ConfigKey{"tile_size", &RunConfig::tile_size, kChanges, "tile side in pixels", {}, 1},
    ConfigKey{"overlap", &RunConfig::overlap, kChanges, "minimum overlap between neighbouring tiles, in pixels"},
    ConfigKey{"sharding", &RunConfig::sharding, kKeeps, "how tiles go to ranks", kShardingNames},
    ConfigKey{"gsd", &RunConfig::gsd, kChanges,
              "ground resolution the model was trained at, metres per pixel (0: unknown; the model card's)"},
    ConfigKey{"gsd_tolerance", &RunConfig::gsd_tolerance, kChanges,
              "relative difference from gsd up to which a raster is read at its own resolution"},
    ConfigKey{"resample", &RunConfig::resample, kChanges,
              "read rasters whose resolution differs from gsd resampled to it (false: as they are)"},
    ConfigKey{"resampling", &RunConfig::resampling, kChanges,
              "how rasters are resampled to gsd (auto: average when coarsening, bilinear when refining)",
              kResamplingNames},
    ConfigKey{"segment_resolution", &RunConfig::segment_resolution, kChanges,
              "task=segment on resampled rasters: write classes at the model's gsd or back at the raster's",
              kSegmentResolutionNames},
    ConfigKey{"model", &RunConfig::model, kResolved, "TorchScript file, or builtin:resnet50"},
    ConfigKey{"task", &RunConfig::task, kChanges, "what the model's output means", kTaskNames},
    ConfigKey{"class_names", &RunConfig::class_names, kKeeps,
              "name of each label value, label 0 first, e.g. class_names=[background,tree] (the model card's)"},
    ConfigKey{"precision", &RunConfig::precision, kResolved,
              "inference precision (auto: bf16 on CPUs that compute it natively with LibTorch 2.x, else fp32)",
              kPrecisionNames},
    ConfigKey{"batch_size",
              &RunConfig::batch_size,
              kKeeps,
              "tiles read and sent to the model together (one forward pass on a GPU; see cpu_forward_tiles)",
              {},
              1,
              kMaxBatch},
    ConfigKey{"gpus", &RunConfig::gpus, kKeeps, "ranks to start when run outside Slurm (one per GPU)", {}, 1},
    ConfigKey{"accelerator", &RunConfig::accelerator, kResolved, "device to run the model on", kAcceleratorNames},
    ConfigKey{"workers", &RunConfig::workers, kKeeps, "reader threads per rank", {}, 1, kMaxThreads},
    ConfigKey{"threads",
              &RunConfig::threads,
              kKeeps,
              "LibTorch threads per rank (0: the CPUs given to the task)",
              {},
              0,
              kMaxThreads},
    ConfigKey{"rendezvous_timeout",
              &RunConfig::rendezvous_timeout,
              kKeeps,
              "seconds every rank has to join the others",
              {},
              1,
              kMaxTimeout},
    ConfigKey{"peer_timeout",
              &RunConfig::peer_timeout,
              kKeeps,
              "seconds a rank waits at a collective for a peer that shows no sign of life (hung, stopped)",
              {},
              1,
              kMaxTimeout},
    ConfigKey{"on_rank_loss", &RunConfig::on_rank_loss, kKeeps,
              "a rank other than rank 0 lost while the tiles run (killed, out of memory): fail ends the run, which "
              "resumes when run again; continue goes on without it, rank 0 doing again the tiles it held (mgpr gpus=N)",
              kOnRankLossNames},
    ConfigKey{"force_precision", &RunConfig::force_precision, kKeeps,
              "run a precision the device only emulates slowly (bf16 on most CPUs)"},
    ConfigKey{"model_libraries", &RunConfig::model_libraries, kResolved,
              "shared libraries of custom operators the model needs (e.g. torchvision's), loaded before it"},
    ConfigKey{"channels_last", &RunConfig::channels_last, kChanges,
              "run the model in channels-last (NHWC): faster on tensor cores, and in oneDNN on a CPU (LibTorch 2.x)"},
    ConfigKey{
        "cudnn_benchmark", &RunConfig::cudnn_benchmark, kChanges,
        "GPU: let cuDNN time its algorithms on the first batch (off: no gain measured on an H100, 5x the peak memory)"},
    ConfigKey{"cpu_forward_tiles",
              &RunConfig::cpu_forward_tiles,
              kKeeps,
              "CPU: tiles per forward pass, each batch run as passes of this many (0: about 4 megapixels, at most 8 "
              "tiles: 4 of 1024 px; as fast as the whole batch in a fraction of its memory)",
              {},
              0,
              kMaxBatch},
    ConfigKey{
        "onednn_fusion", &RunConfig::onednn_fusion, kChanges,
        "CPU: let oneDNN Graph fuse the model's convolutions with what follows them (not task=detect; off: measured "
        "7 % faster in fp32, slower in bf16, up to 2.5 GiB more memory)"},
    ConfigKey{"jit_executor", &RunConfig::jit_executor, kChanges,
              "TorchScript executor: simple (no profiling runs, no fusers), profiling (LibTorch's default, with its "
              "TensorExpr fuser), profiling_no_fuser (that fuser off); auto: simple on CPUs and GPUs",
              kJitExecutorNames},
    ConfigKey{"score_threshold", &RunConfig::score_threshold, kChanges, "task=detect: drop boxes scoring below this"},
    ConfigKey{"iou_threshold", &RunConfig::iou_threshold, kKeeps,
              "task=detect: IoU at which boxes from overlapping tiles are merged"},
    ConfigKey{"class_aware_nms", &RunConfig::class_aware_nms, kKeeps,
              "task=detect: only boxes of the same label are merged"},
    ConfigKey{"classify_model", &RunConfig::classify_model, kResolved,
              "task=detect: a TorchScript classifier, with its model card, that classifies every box's crop"},
    ConfigKey{"crop_margin",
              &RunConfig::crop_margin,
              kChanges,
              "task=detect, classify_model: pixels of context added around each box's crop",
              {},
              0,
              4096},
    ConfigKey{"segment_probability", &RunConfig::segment_probability, kChanges,
              "task=segment: also write the winning class's probability"},
    ConfigKey{"cog", &RunConfig::cog, kKeeps, "task=segment: also write the mosaic as a Cloud-Optimized GeoTIFF"},
    ConfigKey{"polygons", &RunConfig::polygons, kChanges,
              "task=segment: also write the classes as polygons, shapes that cross tiles dissolved into one"},
    ConfigKey{"background_class",
              &RunConfig::background_class,
              kChanges,
              "task=segment, polygons=true: the class value that makes no polygon (-1: every class makes them)",
              {},
              -1,
              254},
    ConfigKey{"min_area", &RunConfig::min_area, kChanges,
              "task=segment, polygons=true: drop polygons smaller than this, in the raster's map units squared"},
    ConfigKey{"simplify", &RunConfig::simplify, kKeeps,
              "task=segment, polygons=true: simplify polygons to this tolerance, in the raster's map units"},
    ConfigKey{"quicklook", &RunConfig::quicklook, kKeeps,
              "write a downsampled PNG of each raster with the results drawn on it"},
    ConfigKey{
        "quicklook_size", &RunConfig::quicklook_size, kKeeps, "longest side of the quicklook PNG in pixels", {}, 16},
    ConfigKey{
        "outputs", &RunConfig::outputs, kKeeps,
        "result files: per_raster, run (one set for all rasters, with their footprints), auto (run above 8 rasters)",
        kOutputLayoutNames},
    ConfigKey{"output_format", &RunConfig::output_format, kKeeps,
              "vector results: gpkg (GeoPackage), fgb (FlatGeobuf), geojson, shp (ESRI Shapefile), csv (CSV with the "
              "geometry as WKT, in place of the plain CSV)",
              kOutputFormatNames},
    ConfigKey{"resume", &RunConfig::resume, kKeeps,
              "skip the tiles an interrupted run with the same inputs and output_dir finished"},
    ConfigKey{"output_dir", &RunConfig::output_dir, kKeeps, "folder for the results"},
    ConfigKey{"log_interval", &RunConfig::log_interval, kKeeps, "batches between progress lines (0: none)"},
};

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

}  // namespace

std::span<const ConfigKey> config_keys() { return kKeys; }

std::string config_value_text(const RunConfig& config, const ConfigKey& key) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& value = config.*member;
        using Value = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<Value, bool>) {
          return value ? "true" : "false";
        } else if constexpr (std::is_same_v<Value, std::string>) {
          return value;
        } else if constexpr (std::is_arithmetic_v<Value>) {
          return fmt::format("{}", value);
        } else {
          return fmt::format("{}", fmt::join(value, ","));
        }
      },
      key.field);
}

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

}  // namespace mgpr
