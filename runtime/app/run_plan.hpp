#pragma once
// The configuration and the machine, resolved once at start-up into what every stage of
// the run receives: the device and how the model runs on it, each stage's own small
// options, the tiles held in memory, the journal's folder. Stages never see the
// configuration (tests/unit/layering_check.sh refuses mgpr/config.hpp outside app/), and
// nothing here is worked out twice.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crops/crop_classifier.hpp"
#include "distributed/communicator.hpp"
#include "mgpr/config.hpp"
#include "mgpr/env_names.hpp"
#include "mgpr/run_choices.hpp"
#include "model/execution_policy.hpp"
#include "model/model.hpp"
#include "pipeline/memory_budget.hpp"
#include "pipeline/pipeline.hpp"
#include "resume/tile_journal.hpp"
#include "source/tile_source.hpp"
#include "tasks/task_output.hpp"

namespace mgpr::runtime {

struct RunPlan {
  int threads = 1;  // LibTorch's intra-op threads on this rank
  DeviceChoice device;
  // How the model runs on the device: the plan asked for first, then its fallback
  // (model/execution_policy.hpp).
  std::vector<ExecutionPlan> execution;
  SourceOptions source;
  ModelOptions model;
  TaskOptions output;
  // task=detect with classify_model=: the second model, which classifies every box's crop.
  std::optional<CropClassifierOptions> crop_classifier;
  // Tiles held in memory: the reader pool's queue and the memory budget count these.
  InFlightTiles in_flight;
  Sharding sharding = Sharding::kDynamic;
  int log_interval = 10;  // batches between progress lines (0: none)
  RendezvousOptions rendezvous;
  bool resume = true;
  // The resolved value of every setting that changes a tile's result, from the key
  // table (mgpr/config.hpp's TileResultEffect): the journal folder records them.
  std::vector<RecordedSetting> journal_settings;
  // This run's journals (resume/tile_journal.hpp), a fingerprint of those settings and
  // the rasters; and where an mgpr that recorded no settings kept the same run's.
  std::filesystem::path journal_folder;
  std::filesystem::path legacy_journal_folder;
  // The model card, for the banner ("name version (licence), sets task, ..."); empty: none.
  std::string model_card;
  // Where class_names came from, for a refusal when they contradict the model: the
  // card's where() or "class_names=".
  std::string class_names_origin;
};

// The rendezvous timeouts `config` asks for; make_run_plan adds the device's fields.
RendezvousOptions rendezvous_options(const RunConfig& config);

// The rasters `config`'s inputs expand to (mgpr/input_list.hpp), once for the whole run:
// a single rank expands them; in a run of several, rank 0 expands them and publishes the
// list on the run's store (`early`: serve_store_early's, held by rank 0 until the
// rendezvous), and the other ranks take that list and list nothing themselves, so every
// rank reads the same frozen list even when a folder or bucket changes while they start.
// A refusal (an empty folder, an unreadable list) is rank 0's, thrown on every rank.
// Empty for fake data.
std::vector<std::string> expand_inputs_once(const RunConfig& config, const RankEnvironment& ranks,
                                            const std::shared_ptr<EarlyStore>& early);

// Resolves `config` on this machine for the rank `ranks` describes: threads from Slurm's
// CPUs or this machine's, the device, the execution plan, each stage's options. Throws
// UsageError for a choice the device cannot run (precision=bf16 on a GPU without it, ...).
// `card` is the model card resolve_config applied, if any. `rasters`: the inputs as
// expand_inputs_once froze them, which a run of several ranks must pass (std::logic_error
// otherwise: no rank lists inputs for itself); a single rank may leave them to this call.
RunPlan make_run_plan(const RunConfig& config, const RankEnvironment& ranks,
                      const std::optional<ModelCard>& card = std::nullopt,
                      std::optional<std::vector<std::string>> rasters = std::nullopt);

// The bounds that depend on the rasters once `source` has opened them (their band count,
// whether their tiles travel raw): the tiles in flight, as they travel, against the
// memory this rank may use (default: memory_limit_bytes()). Throws UsageError naming the
// keys.
void check_run_fits(const RunPlan& plan, const TileSource& source,
                    std::optional<std::uint64_t> memory_limit = memory_limit_bytes());

// The journal settings of `config` as `plan` resolved it: each key the table says
// changes a tile's result, as given (kChanges) or as resolved (kResolved: the precision
// and device auto became, the models' and libraries' content), then the LibTorch version
// and mgpr's version of tile results. Throws std::logic_error for a key that declares no
// effect or a resolved key this function does not know.
std::vector<RecordedSetting> journal_settings(const RunConfig& config, const RunPlan& plan);

// The key an mgpr that recorded no settings made of `config` over `rasters`, to find the
// journal it left (resume/tile_journal.hpp's LegacyJournalKey).
LegacyJournalKey legacy_journal_key(const RunConfig& config, std::span<const std::string> rasters);

// A run of several ranks journals under rank 0's settings, as it reads rank 0's inputs:
// ranks on machines that resolve precision=auto differently must still agree on one
// folder, or they would not agree on the tiles left. Called after make_run_plan on
// every rank with expand_inputs_once's store; nothing for a run of one.
void agree_on_journal(RunPlan& plan, const RankEnvironment& ranks, const std::shared_ptr<EarlyStore>& early);

}  // namespace mgpr::runtime
