#include "task_environment.hpp"

#include <slurm/slurm.h>

#include "mgpr/env_names.hpp"
#include "mgpr/log_layout.hpp"
#include "watchdog_rules.hpp"

namespace mgpr::spank {

bool is_rank_step(std::uint32_t step_id) {
  return step_id != SLURM_BATCH_SCRIPT && step_id != SLURM_EXTERN_CONT && step_id != SLURM_INTERACTIVE_STEP &&
         step_id != SLURM_PENDING_STEP;
}

int derive_master_port(std::uint32_t job_id, std::uint32_t step_id, int port_min, int port_max) {
  const auto range = static_cast<std::uint64_t>(port_max - port_min + 1);
  // 97 is prime to every range size a site would pick that is not a multiple of 97, so
  // consecutive jobs land 97 ports apart, away from each other's first steps.
  const std::uint64_t offset = (std::uint64_t{job_id} * 97U + step_id) % range;
  return port_min + static_cast<int>(offset);
}

std::vector<std::string> split_device_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto entry = list.substr(0, comma);
    if (!entry.empty()) out.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<std::string> device_for_rank(std::span<const std::string> devices, int local_rank) {
  if (devices.empty() || local_rank < 0) return std::nullopt;
  if (devices.size() == 1) return devices.front();
  return devices[static_cast<std::size_t>(local_rank) % devices.size()];
}

std::filesystem::path choose_log_dir(const std::string& plugin_log_dir, const std::optional<std::string>& task_log_dir,
                                     const std::optional<std::string>& submit_dir, std::uint32_t job_id) {
  const std::filesystem::path base = submit_dir.value_or(".");
  const std::string job = std::to_string(job_id);
  if (!plugin_log_dir.empty()) return JobLogLayout{base / plugin_log_dir, job}.job_dir();
  if (task_log_dir && !task_log_dir->empty()) return *task_log_dir;
  return JobLogLayout{base / kDefaultLogRoot, job}.job_dir();
}

Environment task_environment(const TaskFacts& facts, const StepSettings& settings) {
  Environment out{
      {env::kRank, std::to_string(facts.rank)},
      {env::kWorldSize, std::to_string(facts.world_size)},
      {env::kLocalRank, std::to_string(facts.local_rank)},
      {env::kLocalWorldSize, std::to_string(facts.local_world_size)},
      {env::kNodeRank, std::to_string(facts.node_rank)},
      {env::kGroupRank, std::to_string(facts.node_rank)},
      {env::kMasterAddr, facts.master_addr},
      {env::kMasterPort,
       std::to_string(settings.port.value_or(
           derive_master_port(facts.job_id, facts.step_id, settings.port_min, settings.port_max)))},
  };
  if (settings.bind == Bind::kGpu && facts.visible_devices) {
    const auto devices = split_device_list(*facts.visible_devices);
    if (const auto device = device_for_rank(devices, facts.local_rank)) {
      out.emplace_back(env::kCudaVisibleDevices, *device);
    }
  }
  out.emplace_back(env::kLogDir,
                   choose_log_dir(settings.log_dir, facts.task_log_dir, facts.submit_dir, facts.job_id).string());
  if (!settings.config_path.empty()) out.emplace_back(env::kConfig, settings.config_path);
  if (facts.progress_dir) out.emplace_back(env::kProgressFile, progress_file(*facts.progress_dir, facts.rank).string());
  return out;
}

}  // namespace mgpr::spank
