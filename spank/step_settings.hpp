#pragma once
// What applies to one step: the user's --mgpr* options over the site's plugstack.conf
// defaults.
#include <optional>
#include <string>

#include "plugstack_config.hpp"

namespace mgpr::spank {

// The --mgpr* options as the user gave them; unset ones fall back to PlugstackConfig.
struct StepOptions {
  bool enabled = false;
  std::string config_path;
  std::optional<int> rendezvous_timeout_s;
  std::optional<int> stall_timeout_s;
  std::optional<Bind> bind;
  std::optional<int> port;
  std::optional<OnRankLoss> on_rank_loss;
};

struct StepSettings {
  bool enabled = false;
  std::string config_path;  // empty: --mgpr without CONFIG
  int rendezvous_timeout_s = 0;
  bool timeout_given = false;  // --mgpr-timeout on the command line (or #SBATCH)
  int stall_timeout_s = 0;
  Bind bind = Bind::kGpu;
  std::optional<int> port;  // --mgpr-port; else derived from job and step id
  int port_min = 0;
  int port_max = 0;
  std::string log_dir;  // plugstack log_dir; empty: default
  bool strict = true;
  OnRankLoss on_rank_loss = OnRankLoss::kFail;  // --mgpr-on-rank-loss, else plugstack's on_rank_loss
};

StepSettings resolve_settings(const StepOptions& options, const PlugstackConfig& args);

// Whether the watchdog reads progress files (and tasks get MGPR_PROGRESS_FILE).
bool watches_progress(const StepSettings& settings);

const char* bind_name(Bind bind);
const char* rank_loss_name(OnRankLoss on_rank_loss);

}  // namespace mgpr::spank
