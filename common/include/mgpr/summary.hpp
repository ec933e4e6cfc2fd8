#pragma once
// What each rank did, written by the runtime at the end of its run (or when it is
// stopped) as <log_root>/<jobid>/rank-NNNNN.json, and read back by mgpr-logs.
// The JSON field names are the contract; kSummarySchema changes when they do.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr {

inline constexpr int kSummarySchema = 1;

enum class RankStatus { kOk, kFailed, kInterrupted };
std::string_view to_string(RankStatus status);

// One moment of a rank's tile loop, for the job report's timeline: seconds since the
// loop began, and the tiles done and the seconds spent waiting for data by then.
struct TimelinePoint {
  double t_s = 0;
  std::int64_t tiles = 0;
  double data_wait_s = 0;
  bool operator==(const TimelinePoint&) const = default;
};

// A raster this rank could not read (unreadable, corrupt): its tiles were left undone and
// the other rasters finished. `raster` is the path as the run was given it.
struct RasterFailureRecord {
  std::string raster;
  std::string error;
  bool operator==(const RasterFailureRecord&) const = default;
};

// A rank the run lost while the tiles ran, as rank 0 saw it: when, why, and the tiles it
// held whose results had not reached the writer (done again by the live ranks under
// on_rank_loss=continue; else a rerun takes them from the journals or does them).
struct LostRankRecord {
  int rank = 0;
  std::string host;
  double lost_unix_s = 0;
  std::string why;
  std::int64_t tiles_held = 0;
  bool done_again = false;
  std::vector<std::string> tiles;  // the first of them, named
  bool operator==(const LostRankRecord&) const = default;
};

struct RankSummary {
  std::string job_id;
  std::string step_id;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  // Where the rank ran and how it met the others, as its environment told it: what a
  // multi-node job is checked by (the node, the rendezvous address, the devices it saw).
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;  // empty for a rank that ran alone
  int master_port = 0;
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES as the rank found it, empty when unset
  std::string host;
  std::string device;    // "cuda:0", "cpu"
  std::string gpu_name;  // empty on CPU
  std::int64_t tiles = 0;
  std::int64_t batches = 0;
  double elapsed_s = 0;    // wall time of the rank's run
  double model_s = 0;      // time inside the model's forward passes
  double read_s = 0;       // reader threads' time reading and converting, summed over threads
  double data_wait_s = 0;  // time the model waited for tiles: I/O the pipeline did not hide
  std::int64_t memory_avg_bytes = 0;
  std::int64_t memory_peak_bytes = 0;
  std::int64_t memory_total_bytes = 0;  // the device's memory (GPU), 0 on CPU
  // The card's peak use with the allocator's cache and the CUDA context, as nvidia-smi
  // shows it (GPU), 0 on CPU.
  std::int64_t memory_device_peak_bytes = 0;
  // The process's resident-set peak over its whole life, host memory on CPU and GPU
  // alike: rank 0's merge and writers after the loop included, which memory_peak_bytes,
  // sampled in the loop, may miss. 0 in summaries written before it existed.
  std::int64_t host_peak_bytes = 0;
  // The most tiles whose results rank 0's writer held unwritten at once (rank 0; 0
  // elsewhere and in summaries written before it existed): the pacing bounds it while
  // every rank lives, and a lost rank must not let it grow (docs/reliability.md).
  std::int64_t writer_held_peak_tiles = 0;
  // task=detect: the most boxes the model returns for a tile (its detections_per_img, from
  // the model or its card; 0 when unknown), and how many of this rank's tiles got that
  // many: each may have lost objects (box_cap_message; the tiles are named in warnings).
  std::int64_t box_cap = 0;
  std::int64_t tiles_at_box_cap = 0;
  // The rank's requests to the run's store by the key table's row (mgpr/store_keys.hpp):
  // what a tile costs rank 0's store server, and which stage asked. Empty for one rank.
  std::map<std::string, std::int64_t> store_requests;
  RankStatus status = RankStatus::kOk;
  std::string error;  // why, when status is not ok
  std::vector<std::string> warnings;
  // When the tile loop began (seconds since the epoch, this host's clock): puts ranks of
  // different hosts on one time axis. 0 when the rank never reached it.
  double started_unix_s = 0;
  std::vector<TimelinePoint> timeline;              // bounded (TimelineRecorder), oldest first
  std::vector<std::string> outputs;                 // the files this rank wrote (rank 0), absolute
  std::vector<RasterFailureRecord> failed_rasters;  // rasters this rank found unreadable
  std::vector<LostRankRecord> lost_ranks;           // rank 0: the ranks the run lost
  // What the labels mean (index = label value; empty when the run named none) and the
  // model, in one line from its model card (empty without one), for the job's report.
  std::vector<std::string> class_names;
  std::string model_card;

  [[nodiscard]] double tiles_per_s() const { return elapsed_s > 0 ? static_cast<double>(tiles) / elapsed_s : 0; }
  [[nodiscard]] double busy_percent() const { return elapsed_s > 0 ? 100.0 * model_s / elapsed_s : 0; }

  bool operator==(const RankSummary&) const = default;
};

std::string to_json_text(const RankSummary& summary);
// Throws UsageError naming `source` when the text is not a summary of this schema.
RankSummary rank_summary_from_json(std::string_view text, std::string_view source);
// In place of the summary of a rank the run went on without (on_rank_loss=continue):
// failed, and why; its own file, where it wrote one before, says the rest.
RankSummary lost_rank_summary(int rank, int world_size);

// The whole job, from its ranks' summaries.
struct JobTotals {
  int ranks = 0;
  int failed_ranks = 0;
  std::int64_t tiles = 0;
  double elapsed_s = 0;  // the slowest rank's
  std::size_t warnings = 0;
  [[nodiscard]] double tiles_per_s() const { return elapsed_s > 0 ? static_cast<double>(tiles) / elapsed_s : 0; }
};
JobTotals total(std::span<const RankSummary> ranks);
// "store: 12,345 requests from 4 ranks, 1.5 a tile (tiles/next 8,000, beat 300, ...)",
// the rows most asked first; empty when no rank counted any.
std::string store_requests_line(std::span<const RankSummary> ranks);

// "N tiles hit the model's cap of C boxes: raise detections_per_img or use smaller
// tiles": one wording for the rank's warning, the run's end and the job's report.
std::string box_cap_message(std::int64_t tiles, std::int64_t cap);
// One line for a lost rank of `ranks` (rank 0's record): when into the run, why, and the
// tiles it held. Empty lines for none; the text report and the HTML one both read it.
std::vector<std::string> lost_rank_lines(std::span<const RankSummary> ranks);

// The job's whole: box_cap_message over every rank's tiles_at_box_cap, empty when none.
std::string box_cap_message(std::span<const RankSummary> ranks);

// Samples a rank's progress into a timeline of bounded length: a point at most every
// `spacing`, and when `capacity` is reached every other point is dropped and the spacing
// doubled, so a run of minutes or of days keeps an even sampling of its whole length.
class TimelineRecorder {
 public:
  explicit TimelineRecorder(std::vector<TimelinePoint>& into, double spacing_s = 0.5, std::size_t capacity = 256);
  void record(const TimelinePoint& point);
  // Records `point` whatever the spacing: where the loop ended.
  void close(const TimelinePoint& point);

 private:
  std::vector<TimelinePoint>& points_;
  double spacing_s_;
  std::size_t capacity_;
};

}  // namespace mgpr
