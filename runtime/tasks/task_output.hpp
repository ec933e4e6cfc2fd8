#pragma once
// What a task keeps of the model's output. Each rank turns every tile's output into an
// encoded result (one line of text) as the batch finishes, journals it for resume, and
// keeps it; at the end rank 0 holds every tile's result (gathered, or read back from
// the journals of an interrupted run) and writes the final files: the same bytes
// whichever rank computed a tile, and whether or not the run was interrupted.
#include <torch/script.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crops/crop_classifier.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/summary.hpp"
#include "pipeline/pipeline.hpp"
#include "resume/tile_journal.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

struct RasterOutcome;
struct OutputPlan;

// A row of a raster's tiles, as the outputs are written.
struct RasterRow {
  int image = 0;
  int row = 0;
  bool last = false;  // the raster's last row: its files complete with it
};

// Where a rank's results go as each batch finishes, once journaled: towards rank 0's
// writer (stream/output_stream.hpp), so that no rank keeps the run's results.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void take(TileResults batch) = 0;
  // A raster this rank could not read: what is held of it and what comes later is of no
  // use. Called from reader threads.
  virtual void raster_failed(int image, const std::string& reason) = 0;
  // Sends on whatever the sink still holds: the rank's loop ended.
  virtual void flush() {}
};

// What a rank's tiles told of the model, for the rank's summary: task=detect counts the
// tiles that got as many boxes as the model returns at most (TaskOptions::box_cap), each
// of which may have lost objects, and names the first of them in a warning.
struct TaskNotes {
  std::int64_t box_cap = 0;
  std::int64_t tiles_at_box_cap = 0;
  std::vector<std::string> warnings;
};

class TaskOutput;
// `output`'s notes into a rank's summary (its warnings added).
void add_task_notes(RankSummary& summary, const TaskOutput& output);

class TaskOutput : public BatchConsumer {
 public:
  // Encodes the batch's results, records them in the journal (when set) and flushes it,
  // then hands them to the sink (when set) or keeps them.
  void consume(std::span<const TileData> tiles, const torch::IValue& output) final;
  void consume_with_inputs(std::span<const TileData> tiles, const torch::IValue& output, const BatchInput& input) final;
  void set_journal(TileJournal* journal) { journal_ = journal; }
  void set_sink(ResultSink* sink) { sink_ = sink; }
  // The sink's flush (when set): every result of the loop on its way before the ranks meet.
  void flush_sink() {
    if (sink_ != nullptr) sink_->flush();
  }
  // Passed on to the sink (when set).
  void raster_failed(int image, const std::string& reason) final {
    if (sink_ != nullptr) sink_->raster_failed(image, reason);
  }
  // This rank's results of this run (journaled ones of earlier runs excluded), when no
  // sink took them.
  [[nodiscard]] const TileResults& new_results() const { return new_results_; }
  // How many tiles of each raster (by TileId::image) this rank finished in this run.
  [[nodiscard]] const std::map<int, std::int64_t>& tiles_done() const { return tiles_done_; }
  [[nodiscard]] virtual const OutputPlan& plan() const = 0;
  // This rank's notes of this run so far (any thread).
  [[nodiscard]] virtual TaskNotes notes() const { return {}; }

  // Throws UsageError naming the model when `output`, for a batch of `batch` tiles of
  // tile_size px, does not follow the task's contract (docs/models.md). Run on the
  // model's output for a dummy tile before any rank starts.
  virtual void check_output(const torch::IValue& output, std::int64_t batch, int tile_size) const = 0;

  // What of each batch's output the task needs, to be computed on the model's device
  // before the copy to the host (TileModel::set_output_reduction), so that only that
  // crosses; encode_batch then receives it. Empty (the default): the output whole.
  [[nodiscard]] virtual TileModel::OutputReduction device_reduction() const { return {}; }

  // Rank 0 writes the outputs a row of tiles at a time, as each row becomes final
  // (every tile of it done), rows in order and rasters in order, then completes the run's
  // files: write_row for every row of every raster that did not fail, then
  // finish_outputs. Files are written under temporary names renamed when complete; the
  // paths written are added to `written`.
  //
  // Raster `row.image`'s tiles of row `row.row`, their results [first, last) (every
  // tile of the row, in column order; fake data: image 0). A raster's files are
  // complete after its last row. Returns what the run's `rasters` layer counts as the
  // results written now.
  virtual std::int64_t write_row(const RasterRow& row, TileResults::const_iterator first,
                                 TileResults::const_iterator last, std::vector<std::filesystem::path>& written) = 0;
  // A raster that failed after some of its rows were written: its own files are not
  // made (the rows already in the run's files stay there).
  virtual void abandon_raster(int /*image*/) {}
  virtual void finish_outputs(std::span<const RasterOutcome> outcomes, std::vector<std::filesystem::path>& written) = 0;

  // Both at once, when `all` holds every tile's result but those of the rasters in
  // `failed`: the outputs of a run that was not streamed.
  std::vector<std::filesystem::path> write_outputs(const TileResults& all, const RasterFailures& failed);

 protected:
  // One result per tile, in the batch's order; each a single line of text. `input`: the
  // batch's host input (pipeline.hpp), undefined where the caller has none.
  virtual std::vector<std::string> encode_batch(std::span<const TileData> tiles, const torch::IValue& output,
                                                const BatchInput& input) = 0;

 private:
  TileJournal* journal_ = nullptr;
  ResultSink* sink_ = nullptr;
  TileResults new_results_;
  std::map<int, std::int64_t> tiles_done_;
};

// The tasks' own options (docs/outputs.md).
struct TaskOptions {
  Task task = Task::kClassify;
  std::string model;  // named in messages about the model's output
  std::filesystem::path output_dir = "mgpr_output";
  int overlap = 0;                            // segment: the tile cores cut from overlapping tiles
  double score_threshold = 0.0;               // detect: boxes scoring below are dropped
  std::int64_t box_cap = 0;                   // detect: the model's most boxes a tile (0: unknown)
  double iou_threshold = 0.5;                 // detect: overlap at which duplicate boxes are merged
  bool class_aware_nms = true;                // detect: only boxes of one label suppress each other
  bool segment_probability = false;           // segment: also the winning class's probability
  bool cog = false;                           // segment: also a Cloud-Optimized GeoTIFF
  bool quicklook = false;                     // a downsampled PNG with the results drawn over the raster
  int quicklook_size = 1024;                  // its longest side in pixels
  OutputLayout layout = OutputLayout::kAuto;  // plan_outputs resolves kAuto by the raster count
  std::vector<std::string> class_names;       // the name of each label value (index = label); may be empty
  bool segment_at_raster_resolution = false;  // segment: a resampled raster's classes back on its own grid
  bool polygons = false;                      // segment: also the classes as polygons (segment_polygons.hpp)
  int background_class = 0;                   // segment: the class that makes no polygon (-1: none)
  double min_area = 0;                        // segment: polygons smaller than this (map units²) are dropped
  double simplify = 0;                        // segment: polygons simplified to this tolerance (map units)

  // The vector results' format (result_files.hpp).
  OutputFormat format = OutputFormat::kGeoPackage;
  // What the run's results depend on, as its journal records it (name, value): written
  // into the files that keep their provenance (GeoParquet's manifest).
  std::vector<std::pair<std::string, std::string>> run_settings;
};

// What every task's outputs need to know of the run.
struct OutputPlan {
  TaskOptions options;
  std::vector<RasterDescription> rasters;  // empty for fake data
  std::vector<Tile> tiles;                 // every tile of the run, in id order
  int tile_size = 0;
  // Per raster (index = TileId::image): the path prefix of its outputs,
  // <output_dir>/<file stem>, made unique when two rasters share a stem.
  std::vector<std::filesystem::path> prefixes;
  // kPerRaster or kRun, never kAuto: files per raster, or one set for the run (with a
  // layer of raster footprints and their status).
  OutputLayout layout = OutputLayout::kPerRaster;
};

OutputPlan plan_outputs(const TaskOptions& options, const TileSource& source);

// A tile as messages name it: "<raster's file name> tile at x X, y Y".
std::string tile_name(const OutputPlan& plan, const Tile& tile);

// The task's output for options.task. Throws UsageError when this build cannot write it
// (segment needs GDAL).
// `crop_classifier`: task=detect's classify_model= (std::logic_error for another task: the
// configuration refuses it first).
std::unique_ptr<TaskOutput> make_task_output(const OutputPlan& plan,
                                             std::unique_ptr<CropClassifier> crop_classifier = nullptr);

// The run layout (OutputLayout::kRun, docs/outputs.md): one set of files for the run.

// What the run's `rasters` layer says of one raster.
struct RasterOutcome {
  bool failed = false;
  std::string error;            // why it failed (RasterFailures' text); empty when complete
  std::int64_t tiles = 0;       // in the run's grid
  std::int64_t tiles_done = 0;  // with a result
  std::int64_t results = 0;     // what the task wrote for it (the task fills it); 0 when failed
};

// Per raster (index = TileId::image): its tiles, those done, and whether it failed.
std::vector<RasterOutcome> raster_outcomes(const OutputPlan& plan, const TileResults& all,
                                           const RasterFailures& failed);

// The results of raster `image`, in tile order: TileResults is ordered by raster first,
// so this is a range, found without going through the other rasters' results.
std::pair<TileResults::const_iterator, TileResults::const_iterator> results_of(const TileResults& all, int image);
// The same for one row of its tiles.
std::pair<TileResults::const_iterator, TileResults::const_iterator> results_of_row(const TileResults& all, int image,
                                                                                   int row);
// Per raster (index = TileId::image; fake data: image 0): its rows of tiles in order, each
// with its number of tiles.
std::vector<std::vector<std::pair<int, std::int64_t>>> rows_of_tiles(const OutputPlan& plan);
// The top (y, in image pixels) of the windows of raster `image`'s rows after `row`;
// nullopt when `row` is its last.
std::optional<int> next_row_top(const OutputPlan& plan, int image, int row);

// <output_dir>/run_<what><extension>: "detections", ".csv" → run_detections.csv.
std::filesystem::path run_file(const OutputPlan& plan, std::string_view what, std::string_view extension);

// Results travel between ranks as journal lines.
std::string encode_results(const TileResults& results);
void decode_results(const std::string& text, TileResults& into);

// The model's output for one tile against the class names: as many names as classify's
// logits or segment's channels (one channel: one or two names). Throws UsageError naming
// `origin`; detection labels are only known per box and are not checked here.
void check_class_names(Task task, const torch::IValue& one_tile_output, const std::vector<std::string>& class_names,
                       const std::string& origin);

}  // namespace mgpr::runtime
