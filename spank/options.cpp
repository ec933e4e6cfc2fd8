#include "options.hpp"

#include <fmt/format.h>

#include <array>

#include "log.hpp"

namespace mgpr::spank {
namespace {

enum OptionId { kEnable, kTimeout, kStall, kBind, kPort, kOnRankLoss };

// Each callback catches its own errors: an exception must never cross into Slurm's C.
// The parsers' messages already name the option, so they are logged as they are.
template <class Assign>
int guarded_option(std::string_view option, Assign&& assign) noexcept {
  return guarded(option, ErrorPrefix::kNone, std::forward<Assign>(assign));
}

int on_option(int id, const char* optarg, int /*remote*/) {
  auto& options = step_options();
  const std::string_view value = optarg == nullptr ? "" : optarg;
  switch (id) {
    case kEnable:
      return guarded_option("--mgpr", [&] {
        options.enabled = true;
        options.config_path = std::string(value);
      });
    case kTimeout:
      return guarded_option("--mgpr-timeout", [&] {
        options.rendezvous_timeout_s = parse_seconds(value, "--mgpr-timeout");
        options.enabled = true;
      });
    case kStall:
      return guarded_option("--mgpr-stall", [&] {
        options.stall_timeout_s = parse_seconds(value, "--mgpr-stall");
        options.enabled = true;
      });
    case kBind:
      return guarded_option("--mgpr-bind", [&] {
        options.bind = parse_bind(value, "--mgpr-bind");
        options.enabled = true;
      });
    case kPort:
      return guarded_option("--mgpr-port", [&] {
        options.port = parse_port(value, "--mgpr-port");
        options.enabled = true;
      });
    case kOnRankLoss:
      return guarded_option("--mgpr-on-rank-loss", [&] {
        options.on_rank_loss = parse_rank_loss(value, "--mgpr-on-rank-loss");
        options.enabled = true;
      });
    default:
      return -1;
  }
}

// spank_option wants mutable char*; these tables live for the whole process.
char kNameEnable[] = "mgpr";
char kNameTimeout[] = "mgpr-timeout";
char kNameStall[] = "mgpr-stall";
char kNameBind[] = "mgpr-bind";
char kNamePort[] = "mgpr-port";
char kNameOnRankLoss[] = "mgpr-on-rank-loss";
char kArgConfig[] = "CONFIG";
char kArgSeconds[] = "SECONDS";
char kArgBind[] = "gpu|none";
char kArgPort[] = "PORT";
char kArgOnRankLoss[] = "fail|continue";
char kUsageEnable[] =
    "Run this step as an mgpr distributed job: rank and GPU environment for every task, geometry check "
    "before launch, deadlock watchdog. CONFIG: optional run config exported to tasks as MGPR_CONFIG.";
char kUsageTimeout[] =
    "Seconds all ranks have to report rendezvous (MGPR_PROGRESS_FILE) before the step is ended (0: no check).";
char kUsageStall[] =
    "Seconds a rank may go without reporting progress after rendezvous before the step is ended "
    "(0: off).";
char kUsageBind[] = "gpu: one GPU per rank (default); none: leave devices alone (CPU runs).";
char kUsagePort[] = "MASTER_PORT for the step (default: derived from job and step id).";
char kUsageOnRankLoss[] =
    "A rank other than rank 0 lost: fail (default) ends the step; continue leaves the run to go on without it "
    "(exported to tasks as MGPR_ON_RANK_LOSS).";

std::array<struct spank_option, 6> kOptions{{
    {kNameEnable, kArgConfig, kUsageEnable, 2, kEnable, on_option},
    {kNameTimeout, kArgSeconds, kUsageTimeout, 1, kTimeout, on_option},
    {kNameStall, kArgSeconds, kUsageStall, 1, kStall, on_option},
    {kNameBind, kArgBind, kUsageBind, 1, kBind, on_option},
    {kNamePort, kArgPort, kUsagePort, 1, kPort, on_option},
    {kNameOnRankLoss, kArgOnRankLoss, kUsageOnRankLoss, 1, kOnRankLoss, on_option},
}};

}  // namespace

StepOptions& step_options() {
  static StepOptions options;
  return options;
}

int register_options(spank_t spank) {
  for (auto& option : kOptions) {
    if (spank_option_register(spank, &option) != ESPANK_SUCCESS) {
      log_error("cannot register option --{}", option.name);
      return -1;
    }
  }
  return 0;
}

}  // namespace mgpr::spank
