#include "sbatch_script.hpp"

#include <fmt/format.h>

#include <csignal>

#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/rank_endings.hpp"
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
  for (const auto& arg : request.sbatch_args)
    extra += fmt::format("#SBATCH {}\n", sbatch_line_value(arg, "--sbatch-arg"));
  if (extra.empty()) extra = "# (no further #SBATCH options)\n";
  extra.pop_back();

  std::string toml = to_toml(request.config);
  if (!toml.empty() && toml.back() == '\n') toml.pop_back();

  std::string srun_options;
  for (const auto& option : request.srun_options) srun_options += shell_quote(option) + " ";
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
      {"ending_decisions", ending_decisions()},
  };
}

}  // namespace mgpr::launcher
