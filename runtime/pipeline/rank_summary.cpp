#include "pipeline/rank_summary.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>

#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "model/device_memory.hpp"

namespace mgpr::runtime {
namespace {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

// The job's log folder as the plugin chose it (MGPR_LOG_DIR), else as the plugin would
// have inside a Slurm job, else none.
std::filesystem::path rank_log_dir() {
  const auto job = env_value(env::kSlurmJobId);
  const auto task_dir = env_value(env::kLogDir);
  if (!job) return task_dir.value_or("");
  return job_log_dir("", task_dir, env_value(env::kSlurmSubmitDir), *job);
}

}  // namespace

RankSummary base_summary(const RankEnvironment& ranks, const DeviceChoice& device) {
  RankSummary summary;
  summary.job_id = env_value(env::kSlurmJobId).value_or("local");
  summary.step_id = env_value(env::kSlurmStepId).value_or("");
  summary.rank = ranks.rank;
  summary.world_size = ranks.world_size;
  summary.local_rank = ranks.local_rank;
  summary.local_world_size = ranks.local_world_size;
  summary.node_rank = ranks.node_rank;
  summary.master_addr = ranks.master_addr;
  summary.master_port = ranks.master_port;
  summary.visible_devices = env_value(env::kCudaVisibleDevices).value_or("");
  summary.host = host_name("");
  summary.device = device.name;
  summary.gpu_name = device_product_name(device);
  return summary;
}

void fill_from_stats(RankSummary& summary, const PipelineStats& stats) {
  summary.tiles = stats.tiles;
  summary.batches = stats.batches;
  summary.model_s = stats.model_s;
  summary.read_s = stats.read_s;
  summary.data_wait_s = stats.data_wait_s;
  summary.memory_avg_bytes = stats.memory_avg_bytes;
  summary.memory_peak_bytes = stats.memory_peak_bytes;
  summary.memory_total_bytes = stats.memory_total_bytes;
  summary.memory_device_peak_bytes = stats.memory_device_peak_bytes;
  // The tile loop's own time, so tiles/s and busy % are not diluted by start-up.
  summary.elapsed_s = stats.elapsed_s;
}

void describe_model(RankSummary& summary, const std::vector<std::string>& class_names, std::string model_card) {
  summary.class_names = class_names;
  summary.model_card = std::move(model_card);
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

void mark_end_of_timeline(RankSummary& summary) {
  if (summary.started_unix_s <= 0 || summary.timeline.empty()) return;
  auto last = summary.timeline.back();
  last.t_s = std::max(last.t_s, unix_now() - summary.started_unix_s);
  TimelineRecorder(summary.timeline).close(last);
}

void write_rank_summary(RankSummary& summary) {
  summary.host_peak_bytes = process_peak_resident_bytes();
  // On CPU the loop's peak is the same resident set, sampled: the whole life's is truer.
  if (summary.gpu_name.empty())
    summary.memory_peak_bytes = std::max(summary.memory_peak_bytes, summary.host_peak_bytes);
  const auto dir = rank_log_dir();
  if (dir.empty()) return;
  std::filesystem::create_directories(dir);
  const JobLogLayout layout{dir.parent_path(), dir.filename().string()};
  write_file_atomically(layout.rank_summary(summary.rank), to_json_text(summary));
}

}  // namespace mgpr::runtime
