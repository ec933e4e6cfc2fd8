#include "app/run_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, there since fmt 11
#include <sched.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "crops/crop_classifier_card.hpp"
#include "distributed/rank0_value.hpp"
#include "mgpr/error.hpp"
#include "mgpr/input_list.hpp"
#include "mgpr/model_card.hpp"
#include "mgpr/store_keys.hpp"
#include "mgpr/text.hpp"
#include "pipeline/memory_budget.hpp"
#include "resume/journal_record.hpp"
#include "resume/tile_journal.hpp"
#include "source/fake_source.hpp"

namespace mgpr::runtime {
namespace {

// Slurm's CPUs per task when set; otherwise the CPUs this process may run on, shared
// between the ranks of this machine so local ranks do not oversubscribe it.
int default_threads(const RankEnvironment& ranks) {
  // A value that is not a whole number from 1 up is ignored, and the CPUs decide.
  if (const char* cpus = std::getenv(env::kSlurmCpusPerTask)) {
    if (const auto count = parse_number<int>(cpus, 1, 1 << 20)) return *count;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  const int usable = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                                    : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  return std::max(1, usable / std::max(1, ranks.local_world_size));
}

// Raised by a change to what a tile's result holds or how mgpr computes it, so that a
// journal of the older results is not resumed.
constexpr int kTileResultsVersion = 1;

SourceOptions source_options(const RunConfig& config, std::vector<std::string> rasters) {
  SourceOptions source;
  if (config.use_fake_data) {
    source.fake = FakeDataOptions{config.dummy_dataset_count, config.dummy_dataset_delay,
                                  parse_fake_data_type(config.dummy_dataset_type)};
  } else {
    source.rasters = std::move(rasters);
  }
  source.bands = config.bands;
  source.nodata = parse_nodata(config.nodata);
  source.scale = config.scale;
  source.mean = config.mean;
  source.std = config.std;
  source.tile_size = config.tile_size;
  source.overlap = config.overlap;
  source.resolution = GroundResolution{config.gsd, config.gsd_tolerance, config.resample, config.resampling};
  return source;
}

TaskOptions task_options(const RunConfig& config) {
  TaskOptions output;
  output.task = parse_task(config.task);
  output.model = config.model;
  output.output_dir = config.output_dir;
  output.overlap = config.overlap;
  output.score_threshold = config.score_threshold;
  output.iou_threshold = config.iou_threshold;
  output.class_aware_nms = config.class_aware_nms;
  output.segment_probability = config.segment_probability;
  output.cog = config.cog;
  output.quicklook = config.quicklook;
  output.quicklook_size = config.quicklook_size;
  output.layout = parse_output_layout(config.outputs);
  output.format = parse_output_format(config.output_format);
  output.class_names = config.class_names;
  output.segment_at_raster_resolution = config.segment_resolution == "raster";
  output.polygons = config.polygons;
  output.background_class = config.background_class;
  output.min_area = config.min_area;
  output.simplify = config.simplify;
  return output;
}

// classify_model= and its card, read here (a card's settings are configuration keys) and
// checked by the crop classifier's own stage against the detector's.
CropClassifierOptions crop_classifier_options(const RunConfig& config) {
  std::error_code error;
  const auto card = std::filesystem::is_regular_file(config.classify_model, error)
                        ? read_model_card(config.classify_model)
                        : std::nullopt;
  std::optional<CropClassifierCard> read;
  if (card) {
    RunConfig settings;
    apply_model_card(settings, *card);
    read = CropClassifierCard{card->where(),  card->setting_keys, settings.task, settings.tile_size,  settings.bands,
                              settings.scale, settings.mean,      settings.std,  settings.class_names};
  }
  return crop_classifier_from_card({config.classify_model, config.model_libraries, config.crop_margin, config.bands,
                                    config.scale, config.mean, config.std},
                                   read);
}

// What a model file is for the journal: its content (journal_record.hpp), or its name
// for a built-in one or a file that cannot be read (the run then fails on loading it).
std::string model_identity(const std::string& model) {
  if (model.starts_with("builtin:")) return model;
  const auto identity = file_content_identity(model);
  return identity ? *identity : fmt::format("{} (unreadable)", model);
}

// The value of a key that changes a tile's result through what it becomes here (the key
// table's kResolved); none for the inputs' keys, whose rasters the record lists. A key
// declared so without a case here is a mistake in the program, not the user's.
std::optional<std::string> resolved_value(std::string_view name, const RunConfig& config, const RunPlan& plan) {
  if (name == "image_path" || name == "image_glob" || name == "recursive") return std::nullopt;
  if (name == "model") return model_identity(config.model);
  if (name == "classify_model") return config.classify_model.empty() ? "none" : model_identity(config.classify_model);
  if (name == "model_libraries") {
    std::vector<std::string> identities;
    for (const auto& library : config.model_libraries) identities.push_back(model_identity(library));
    return fmt::format("{}", fmt::join(identities, "; "));
  }
  if (name == "precision") {
    // The plan tried first: a fallback (execution_policy.hpp) follows from it and the model.
    const auto& first = plan.execution.front();
    return fmt::format("{}{}", precision_name(first), first.autocast ? " autocast" : "");
  }
  if (name == "accelerator") return plan.device.is_cuda ? "cuda" : "cpu";
  throw std::logic_error(
      fmt::format("the key table says {} changes a tile's result once resolved, and the run "
                  "plan does not resolve it for the journal",
                  name));
}

}  // namespace

LegacyJournalKey legacy_journal_key(const RunConfig& c, std::span<const std::string> rasters) {
  LegacyJournalKey key;
  key.output_dir = c.output_dir;
  // The text of every release before journal folders recorded their settings.
  key.settings = fmt::format(
      "task={} tile={} overlap={} bands={} scale={} mean={} std={} precision={} "
      "score={} probability={} fake={} count={}",
      c.task, c.tile_size, c.overlap, fmt::join(c.bands, ","), c.scale, fmt::join(c.mean, ","), fmt::join(c.std, ","),
      c.precision, c.score_threshold, c.segment_probability, c.use_fake_data, c.dummy_dataset_count);
  if (!c.nodata.empty()) key.settings += fmt::format(" nodata={}", c.nodata);
  if (c.polygons) key.settings += fmt::format(" polygons background={}", c.background_class);
  if (!c.classify_model.empty()) {
    key.settings += fmt::format(" classify_model={} crop_margin={}", c.classify_model, c.crop_margin);
  }
  if (c.gsd > 0 && c.resample) {
    key.settings += fmt::format(" gsd={} tolerance={} resampling={}", c.gsd, c.gsd_tolerance, c.resampling);
  }
  key.model = c.model;
  key.libraries = c.model_libraries;
  key.rasters.assign(rasters.begin(), rasters.end());
  return key;
}

std::vector<RecordedSetting> journal_settings(const RunConfig& config, const RunPlan& plan) {
  std::vector<RecordedSetting> settings;
  for (const auto& key : config_keys()) {
    switch (key.effect) {
      case TileResultEffect::kKeeps:
        break;
      case TileResultEffect::kChanges:
        settings.emplace_back(key.name, config_value_text(config, key));
        break;
      case TileResultEffect::kResolved:
        if (auto value = resolved_value(key.name, config, plan)) settings.emplace_back(key.name, std::move(*value));
        break;
      case TileResultEffect::kUndeclared:
        throw std::logic_error(fmt::format("the key table declares no effect on a tile's result for {}", key.name));
    }
  }
  // The libraries and mgpr's own computation: another LibTorch can run other kernels.
  settings.emplace_back("libtorch", TORCH_VERSION);
  settings.emplace_back("tile_results_version", std::to_string(kTileResultsVersion));
  return settings;
}

void agree_on_journal(RunPlan& plan, const RankEnvironment& ranks, const std::shared_ptr<EarlyStore>& early) {
  if (ranks.world_size <= 1) return;
  const auto settings = share_from_rank0(ranks, plan.rendezvous, early, store_key(StoreKey::kJournalSettings),
                                         [&] { return record_text(plan.journal_settings, {}); });
  plan.journal_settings = parse_record(settings).settings;
  plan.journal_folder = journal_dir({plan.output.output_dir, plan.journal_settings, plan.source.rasters});
}

RendezvousOptions rendezvous_options(const RunConfig& config) {
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(config.rendezvous_timeout);
  options.peer_timeout = std::chrono::seconds(config.peer_timeout);
  options.survive_rank_loss = parse_on_rank_loss(config.on_rank_loss) == OnRankLoss::kContinue;
  return options;
}

std::vector<std::string> expand_inputs_once(const RunConfig& config, const RankEnvironment& ranks,
                                            const std::shared_ptr<EarlyStore>& early) {
  if (config.use_fake_data) return {};
  const auto expand = [&] { return expand_inputs(config.image_path, {config.image_glob, config.recursive}); };
  if (ranks.world_size <= 1) return expand();
  return split_at_nuls(share_from_rank0(ranks, rendezvous_options(config), early, store_key(StoreKey::kFrozenInputs),
                                        [&] { return join_with_nuls(expand()); }));
}

RunPlan make_run_plan(const RunConfig& config, const RankEnvironment& ranks, const std::optional<ModelCard>& card,
                      std::optional<std::vector<std::string>> rasters) {
  if (!rasters && ranks.world_size > 1 && !config.use_fake_data) {
    throw std::logic_error("make_run_plan: a run of several ranks takes the inputs expand_inputs_once froze");
  }
  if (!rasters && !config.use_fake_data) rasters = expand_inputs_once(config, ranks, nullptr);
  RunPlan plan;
  plan.threads = config.threads > 0 ? config.threads : default_threads(ranks);
  plan.device = choose_device(parse_accelerator(config.accelerator), ranks.local_rank);
  plan.execution = plan_execution({parse_precision(config.precision), config.force_precision, config.channels_last,
                                   config.batch_size, config.tile_size, config.cpu_forward_tiles, config.onednn_fusion,
                                   parse_task(config.task), parse_jit_executor(config.jit_executor)},
                                  execution_facts(plan.device), config.cudnn_benchmark);
  plan.source = source_options(config, rasters.value_or(std::vector<std::string>{}));
  // Start-up opens every raster before the model runs: all of this rank's CPUs may help.
  plan.source.open_threads = std::max(plan.threads, config.workers);
  plan.source.readers = config.workers;
  // 8- and 16-bit integer rasters travel raw and are scaled where the model runs: a
  // quarter or half of float32's bytes in the readers' queue, the batch slots and, on a
  // GPU, over PCIe.
  plan.source.raw_samples = true;
  plan.model = ModelOptions{config.model, config.model_libraries, config.tile_size, {}, {}};
  plan.class_names_origin = "class_names=";
  if (card) {
    plan.model_card = card->summary();
    plan.model.card_name = card->where();
    RunConfig card_alone;
    apply_model_card(card_alone, *card);
    const auto sets = [&](std::string_view key) {
      return std::find(card->setting_keys.begin(), card->setting_keys.end(), key) != card->setting_keys.end();
    };
    if (sets("bands")) plan.model.card_bands = card_alone.bands;
    if (sets("class_names") && card_alone.class_names == config.class_names) {
      plan.class_names_origin = fmt::format("class_names= of {}", card->where());
    }
  }
  plan.output = task_options(config);
  // The card's cap, where it gives one; the model's own attribute beats it (rank_run.cpp).
  if (card && card->detections_per_img) plan.output.box_cap = *card->detections_per_img;
  if (!config.classify_model.empty()) {
    plan.crop_classifier = crop_classifier_options(config);
    if (plan.device.is_cuda) plan.crop_classifier->batch_size = kGpuCropBatch;
  }
  plan.in_flight = in_flight_tiles(config.batch_size, config.workers, plan.device);
  plan.sharding = parse_sharding(config.sharding);
  plan.log_interval = config.log_interval;
  plan.rendezvous = rendezvous_options(config);
  plan.rendezvous.use_gpu = plan.device.is_cuda;
  plan.rendezvous.device_index = plan.device.is_cuda ? static_cast<int>(plan.device.device.index()) : 0;
  plan.resume = config.resume;
  plan.journal_settings = journal_settings(config, plan);
  plan.output.run_settings = plan.journal_settings;  // the files' provenance
  plan.journal_folder = journal_dir({plan.output.output_dir, plan.journal_settings, plan.source.rasters});
  plan.legacy_journal_folder = legacy_journal_dir(legacy_journal_key(config, plan.source.rasters));
  return plan;
}

void check_run_fits(const RunPlan& plan, const TileSource& source, std::optional<std::uint64_t> memory_limit) {
  HostTiles tiles{plan.source.tile_size, source.channels()};
  if (const auto raw = source.raw_scaling()) {
    tiles.raw = raw->sample;
    // A CPU makes each pass's rows float32 just before the model: forward_tiles of them,
    // or the whole batch when 0; the largest of the plans' passes counts.
    if (!plan.device.is_cuda) {
      for (const auto& execution : plan.execution) {
        const int pass = execution.forward_tiles > 0 ? std::min(execution.forward_tiles, plan.in_flight.batch_size)
                                                     : plan.in_flight.batch_size;
        tiles.float_pass_tiles = std::max(tiles.float_pass_tiles, pass);
      }
    }
  }
  check_memory_budget(plan.in_flight, tiles, memory_limit);
}

}  // namespace mgpr::runtime
