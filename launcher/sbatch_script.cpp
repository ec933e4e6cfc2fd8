#include "sbatch_script.hpp"

#include <fmt/format.h>

#include <csignal>

#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/rank_endings.hpp"
#include "mgpr/run_choices.hpp"
#include "mgpr/version.hpp"
#include "shell_quote.hpp"

namespace mgpr::launcher {
namespace {

constexpr int kMemoryGiBPerGpu = 8;

// sbatch reads #SBATCH lines with its own small parser, not a shell: keep the values
// there to characters it cannot misread. File names go through the config instead.
std::string sbatch_line_value(std::string_view value, std::string_view what) {
  for (const char c : value) {
    if (c == '\n' || c == '"' || c == '\'' || c == ' ' || c == '\t' || c == '\\') {
      throw UsageError(
          fmt::format("{} '{}' cannot go on an #SBATCH line (it holds whitespace, a quote or a "
                      "backslash); choose one without",
                      what, value));
    }
  }
  return std::string(value);
}

// The job script's choice of the word the plugin left in the endings file, and its case
// over it: each row of
// the table says whether running the job again can help, and why. A kill from outside
// is requeued a bounded number of times (Slurm's SLURM_RESTART_COUNT counts them).
std::string ending_decisions() {
  // Several nodes may have written: the first word in the table's order is the cause.
  std::string words;
  for (const auto& row : kRankEndings) words += fmt::format(" {}", row.word);
  std::string text = fmt::format(
      "for word in{}; do\n"
      "  if grep -qs \"^[0-9]* $word \" \"$endings\"; then\n"
      "    ending=$word\n"
      "    break\n"
      "  fi\n"
      "done\n",
      words);
  text += "case \"$ending\" in\n";
  for (const auto& row : kRankEndings) {
    const auto why = shell_quote(std::string(row.why));
    if (row.requeue) {
      text += fmt::format(
          "  {0})\n"
          "    if [ \"${{SLURM_RESTART_COUNT:-0}}\" -lt {1} ]; then\n"
          "      echo \"mgpr: requeueing job $SLURM_JOB_ID:\" {2} >&2\n"
          "      scontrol requeue \"$SLURM_JOB_ID\"\n"
          "    else\n"
          "      echo \"mgpr: not requeueing job $SLURM_JOB_ID, requeued {1} times already:\" {2} >&2\n"
          "    fi\n"
          "    ;;\n",
          row.word, kRequeuesAfterAKill, why);
    } else {
      text +=
          fmt::format("  {})\n    echo \"mgpr: not requeueing job $SLURM_JOB_ID:\" {} >&2\n    ;;\n", row.word, why);
    }
  }
  return text + "esac";
}

// Under on_rank_loss=continue a rank other than rank 0 may die while the run completes:
// srun's status is then non-zero, so rank 0's own (the plugin records it; 0 only when
// every tile has its result) is taken as the run's, unless the watchdog ended the step,
// which the endings file then says.
std::string rank_loss_status(OnRankLoss on_rank_loss) {
  if (on_rank_loss == OnRankLoss::kFail)
    return "# on_rank_loss=fail: a lost rank ends the step, and srun's status is the run's.";
  return "# on_rank_loss=continue: srun's status is non-zero when a rank was lost, even when the run went on\n"
         "# without it and completed; rank 0's own status is the run's unless the watchdog ended the step.\n"
         "if [ \"$status\" -ne 0 ] && [ ! -s \"$endings\" ] && [ -s \"$rank_zero_exit\" ]; then\n"
         "  rank_zero_status=$(tail -n 1 \"$rank_zero_exit\" | cut -d ' ' -f 2)\n"
         "  case \"$rank_zero_status\" in\n"
         "    '' | *[!0-9]*) ;;\n"
         "    *)\n"
         "      echo \"mgpr: srun exited with $status as the run lost a rank (diagnoses.log names it); rank 0 exited "
         "with "
         "$rank_zero_status, the run's status (on_rank_loss=continue)\" >&2\n"
         "      status=$rank_zero_status\n"
         "      ;;\n"
         "  esac\n"
         "fi";
}

}  // namespace

int derived_cpus_per_task(const RunConfig& config) { return 2 * config.workers; }

std::string derived_memory(const SubmitRequest& request) {
  return fmt::format("{}G", kMemoryGiBPerGpu * request.gpus.count);
}

std::string refusal_hint(std::string_view sbatch_error, const SubmitRequest& request) {
  const int cpus = request.cpus_per_task > 0 ? request.cpus_per_task : derived_cpus_per_task(request.config);
  const std::string asked =
      fmt::format("{} node(s) x {} GPU(s){} x {} CPUs per rank, {} memory per node", request.nodes, request.gpus.count,
                  request.gpus.type.empty() ? "" : " of type " + request.gpus.type, cpus,
                  request.mem.empty() ? derived_memory(request) : request.mem);
  if (sbatch_error.find("command not found") != std::string_view::npos) {
    return "sbatch is not on PATH: submit from a login node of the cluster, or load Slurm's module first";
  }
  // Too many GPUs per node usually shows up as one of these two: the GPUs themselves, or
  // the CPUs and memory that come with one rank per GPU.
  if (sbatch_error.find("node configuration is not available") != std::string_view::npos ||
      sbatch_error.find("More processors requested than permitted") != std::string_view::npos) {
    return fmt::format(
        "no node or partition offers what the job asks ({}); lower --gpus, --nodes, "
        "--cpus-per-task (default 2 per reader worker) or --mem, or see what nodes have with "
        "sinfo -o '%P %D %G %c %m'",
        asked);
  }
  return fmt::format("the job asks for {}; check it against the cluster's partitions (sinfo -o '%P %D %G %c %m')",
                     asked);
}

TemplateValues script_values(const SubmitRequest& request) {
  std::string extra;
  const auto add = [&](std::string_view option, const std::string& value) {
    if (!value.empty()) extra += fmt::format("#SBATCH --{}={}\n", option, sbatch_line_value(value, option));
  };
  add("partition", request.partition);
  add("account", request.account);
  add("qos", request.qos);
  add("constraint", request.constraint);
  if (request.exclusive) extra += "#SBATCH --exclusive\n";
  const auto on_rank_loss = parse_on_rank_loss(request.config.on_rank_loss);
  // A node that fails takes its ranks with it; the job goes on with the others.
  if (on_rank_loss == OnRankLoss::kContinue) extra += "#SBATCH --no-kill\n";
  for (const auto& arg : request.sbatch_args)
    extra += fmt::format("#SBATCH {}\n", sbatch_line_value(arg, "--sbatch-arg"));
  if (extra.empty()) extra = "# (no further #SBATCH options)\n";
  extra.pop_back();

  std::string toml = to_toml(request.config);
  if (!toml.empty() && toml.back() == '\n') toml.pop_back();

  // Always given: it overrides the site's plugstack.conf default, which the job's config
  // (every key written) would otherwise contradict.
  std::vector<std::string> srun_arguments{fmt::format("--mgpr-on-rank-loss={}", request.config.on_rank_loss)};
  // Where a site sets KillOnBadExit=1, Slurm would end the step for a lost rank itself.
  if (on_rank_loss == OnRankLoss::kContinue) srun_arguments.emplace_back("--kill-on-bad-exit=0");
  srun_arguments.insert(srun_arguments.end(), request.srun_options.begin(), request.srun_options.end());
  std::string srun_options;
  for (const auto& option : srun_arguments) srun_options += shell_quote(option) + " ";
  if (!srun_options.empty()) srun_options.pop_back();

  const std::string log_dir = request.log_dir.string();
  return {
      {"mgpr_version", kVersion},
      {"job_name", sbatch_line_value(request.job_name, "--job-name")},
      {"nodes", std::to_string(request.nodes)},
      {"ntasks_per_node", std::to_string(request.gpus.count)},
      {"gpus_per_node", request.gpus.to_slurm()},
      {"cpus_per_task",
       std::to_string(request.cpus_per_task > 0 ? request.cpus_per_task : derived_cpus_per_task(request.config))},
      {"mem", sbatch_line_value(request.mem.empty() ? derived_memory(request) : request.mem, "--mem")},
      {"time", sbatch_line_value(request.time, "--time")},
      {"stdout_log", sbatch_line_value((request.log_dir / kSbatchStdoutPattern).string(), "--log-dir")},
      {"stderr_log", sbatch_line_value((request.log_dir / kSbatchStderrPattern).string(), "--log-dir")},
      {"extra_sbatch_lines", extra},
      {"log_dir", shell_quote(log_dir)},
      {"config_toml", toml},
      {"srun_options", srun_options},
      {"mgpr_command", shell_quote(request.mgpr_command)},
      {"stopped_exit_code", std::to_string(kExitStopped)},
      {"walltime_signal_exit_code", std::to_string(128 + SIGUSR2)},  // srun's status for a task USR2 ended
      {"endings_file", kStepEndingsFile},
      {"rank_zero_exit_file", kRankZeroExitFile},
      {"rank_loss_status", rank_loss_status(on_rank_loss)},
      {"ending_decisions", ending_decisions()},
  };
}

}  // namespace mgpr::launcher
