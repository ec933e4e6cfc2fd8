#pragma once
// Site defaults from the plugin's line in plugstack.conf:
//   required /usr/lib/mgpr/mgpr.so timeout=300 stall=600 bind=gpu port_min=29500 ...
#include <optional>
#include <span>
#include <string>

#include "mgpr/run_choices.hpp"

namespace mgpr::spank {

enum class Bind { kGpu, kNone };

struct PlugstackConfig {
  int rendezvous_timeout_s = 300;  // 0: no rendezvous check
  int stall_timeout_s = 600;       // 0: no stall check
  Bind bind = Bind::kGpu;
  int port_min = 29500;
  int port_max = 29999;
  std::string log_dir;  // empty: <submit dir>/slurm_logs
  bool strict = true;   // false: geometry problems warn instead of refusing
  // A rank other than rank 0 lost: the watchdog ends the step (fail), or leaves the run
  // to go on without it (continue, which the runtime must be told too: MGPR_ON_RANK_LOSS).
  OnRankLoss on_rank_loss = OnRankLoss::kFail;
};

// The arguments parsed in slurm_spank_init, for the other callbacks of the process.
PlugstackConfig& plugstack_config();

// Throws UsageError naming the argument when a key is unknown or a value is bad.
PlugstackConfig parse_plugstack_config(std::span<const std::string> args);
Bind parse_bind(std::string_view text, std::string_view where);
int parse_seconds(std::string_view text, std::string_view where);
int parse_port(std::string_view text, std::string_view where);
OnRankLoss parse_rank_loss(std::string_view text, std::string_view where);

}  // namespace mgpr::spank
