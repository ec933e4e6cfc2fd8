#include "srun_context.hpp"

#include "log.hpp"
#include "options.hpp"
#include "spank_items.hpp"
#include "task_environment.hpp"

namespace mgpr::spank {

int srun_local_user_init(spank_t spank) {
  const StepSettings settings = resolve_settings(step_options(), plugstack_config());
  if (!settings.enabled) return 0;
  const SpankItems items(spank);
  const auto job_id = items.job_id();
  const auto step_id = items.step_id();
  if (!job_id || !step_id) return 0;
  const int port = settings.port.value_or(derive_master_port(*job_id, *step_id, settings.port_min, settings.port_max));
  log_verbose(
      "step {}.{}: WORLD_SIZE={}, --mgpr-bind={}, MASTER_PORT={}; geometry is checked on each node before launch",
      *job_id, *step_id, items.total_task_count().value_or(0), bind_name(settings.bind), port);
  return 0;
}

}  // namespace mgpr::spank
