#include "task_environment.hpp"

#include <slurm/slurm.h>

#include "mgpr/env_names.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/text.hpp"
#include "watchdog_rules.hpp"

namespace mgpr::spank {

bool is_rank_step(std::uint32_t step_id) {
  return step_id != SLURM_BATCH_SCRIPT && step_id != SLURM_EXTERN_CONT && step_id != SLURM_INTERACTIVE_STEP &&
         step_id != SLURM_PENDING_STEP;
}

Environment task_environment(const TaskFacts& facts, const StepSettings& settings) {
  RankEnvironment ranks;
  ranks.rank = facts.rank;
  ranks.world_size = facts.world_size;
  ranks.local_rank = facts.local_rank;
  ranks.local_world_size = facts.local_world_size;
  ranks.node_rank = facts.node_rank;
  ranks.master_addr = facts.master_addr;
  ranks.master_port =
      settings.port.value_or(derive_master_port(facts.job_id, facts.step_id, settings.port_min, settings.port_max));
  Environment out = torchrun_environment(ranks);
  if (settings.bind == Bind::kGpu && facts.visible_devices) {
    const auto devices = split_list(*facts.visible_devices);
    if (const auto device = device_for_rank(devices, facts.local_rank)) {
      out.emplace_back(env::kCudaVisibleDevices, *device);
    }
  }
  out.emplace_back(
      env::kLogDir,
      job_log_dir(settings.log_dir, facts.task_log_dir, facts.submit_dir, std::to_string(facts.job_id)).string());
  if (!settings.config_path.empty()) out.emplace_back(env::kConfig, settings.config_path);
  // Always, so the runtime refuses a config that says otherwise than the watchdog acts.
  out.emplace_back(env::kOnRankLoss, rank_loss_name(settings.on_rank_loss));
  if (facts.progress_dir) out.emplace_back(env::kProgressFile, progress_file(*facts.progress_dir, facts.rank).string());
  return out;
}

}  // namespace mgpr::spank
