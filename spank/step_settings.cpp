#include "step_settings.hpp"

namespace mgpr::spank {

StepSettings resolve_settings(const StepOptions& options, const PlugstackConfig& args) {
  StepSettings out;
  out.enabled = options.enabled;
  out.config_path = options.config_path;
  out.rendezvous_timeout_s = options.rendezvous_timeout_s.value_or(args.rendezvous_timeout_s);
  out.timeout_given = options.rendezvous_timeout_s.has_value();
  out.stall_timeout_s = options.stall_timeout_s.value_or(args.stall_timeout_s);
  out.bind = options.bind.value_or(args.bind);
  out.port = options.port;
  out.port_min = args.port_min;
  out.port_max = args.port_max;
  out.log_dir = args.log_dir;
  out.strict = args.strict;
  out.on_rank_loss = options.on_rank_loss.value_or(args.on_rank_loss);
  return out;
}

bool watches_progress(const StepSettings& settings) {
  return settings.rendezvous_timeout_s > 0 || settings.stall_timeout_s > 0;
}

const char* bind_name(Bind bind) { return bind == Bind::kGpu ? "gpu" : "none"; }

const char* rank_loss_name(OnRankLoss on_rank_loss) {
  return on_rank_loss == OnRankLoss::kContinue ? "continue" : "fail";
}

}  // namespace mgpr::spank
