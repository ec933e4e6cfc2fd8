// mgpr-submit: renders a job script that is right by construction (one task per GPU)
// and submits it with sbatch.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "job_state.hpp"
#include "mgpr/cli.hpp"
#include "mgpr/error.hpp"
#include "mgpr/input_kind.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "mgpr/version.hpp"
#include "sbatch_script.hpp"
#include "submit_checks.hpp"
#include "template_render.hpp"

#ifndef MGPR_INSTALLED_TEMPLATE_DIR
#define MGPR_INSTALLED_TEMPLATE_DIR ""
#endif
#ifndef MGPR_SOURCE_TEMPLATE_DIR
#define MGPR_SOURCE_TEMPLATE_DIR ""
#endif

namespace fs = std::filesystem;
using namespace mgpr::launcher;
using mgpr::kExitUsage;
using mgpr::parse_command_line;
using mgpr::run_command;

namespace {

struct Cli {
  std::string gpus = "1";
  std::string config_file;
  std::string template_file;
  std::string log_dir = mgpr::kDefaultLogRoot;
  std::vector<std::string> arguments;
  bool dry_run = false;
  bool wait = false;
};

fs::path own_directory() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// The template installed beside this binary (PREFIX/bin -> PREFIX/share/mgpr/templates,
// so a package or a prefix moved elsewhere finds its own), else the configured install
// folder's, else the source tree's (running from a build folder).
fs::path default_template() {
  const auto beside = own_directory().empty() ? fs::path() : own_directory().parent_path() / "share/mgpr/templates";
  for (const fs::path& dir : {beside, fs::path(MGPR_INSTALLED_TEMPLATE_DIR), fs::path(MGPR_SOURCE_TEMPLATE_DIR)}) {
    if (!dir.empty() && fs::exists(dir / "mgpr.sbatch")) return dir / "mgpr.sbatch";
  }
  throw mgpr::UsageError("the default job template mgpr.sbatch is not installed; pass --template FILE");
}

// The runtime next to this binary (build tree or install prefix), else from PATH.
std::string runtime_command() {
  for (const auto& candidate : {own_directory() / "mgpr"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "mgpr";
}

// The job may start in another folder: a local path, a list file (whose own lines are
// relative to the list) and the local archive or file inside a /vsi path
// (/vsizip/a.zip/x.tif) become absolute. Only the local part is normalised: in a URL or a
// /vsi chain "//" is part of the name (/vsicurl_streaming/https://host/x).
std::string absolute_input(const std::string& input) {
  const auto classified = mgpr::classify_input(input);
  if (classified.kind != mgpr::InputKind::kLocalPath && classified.kind != mgpr::InputKind::kListFile &&
      classified.kind != mgpr::InputKind::kVsiPath) {
    return input;
  }
  const auto file = mgpr::local_file_of(input, classified);
  if (file.empty() || (classified.kind == mgpr::InputKind::kVsiPath && file.starts_with('/'))) return input;
  return mgpr::with_local_file(input, classified, fs::absolute(fs::path(file)).lexically_normal().string());
}

void make_paths_absolute(mgpr::RunConfig& config) {
  for (auto& input : config.image_path) input = absolute_input(input);
  if (!config.model.starts_with("builtin:")) config.model = fs::absolute(config.model).lexically_normal().string();
  config.output_dir = fs::absolute(config.output_dir).lexically_normal().string();
}

int wait_for_job(const std::string& job_id, const mgpr::JobLogLayout& layout) {
  std::optional<JobState> state;
  for (;;) {
    state = query_job_state(job_id);
    if (state && state->finished()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  fmt::print("mgpr-submit: job {} ended: {} (exit code {})\n", job_id, state->state, state->exit_code);
  const auto logs =
      run_command({(own_directory() / "mgpr-logs").string(), "--log-dir", layout.log_root.string(), job_id});
  fmt::print("{}", logs.out);
  if (state->signal != 0 && state->exit_code == 0) return 128 + state->signal;
  if (state->state != "COMPLETED" && state->exit_code == 0) return 1;
  return state->exit_code;
}

int submit(const Cli& cli, SubmitRequest request) {
  request.gpus = mgpr::parse_gpu_spec(cli.gpus);
  request.config = mgpr::resolve_config(cli.config_file, cli.arguments);
  const auto inputs = check_inputs(request.config);
  auto notes = remote_input_notes(inputs.remote, credential_hints_from_environment());
  for (auto& note : unchecked_input_notes(inputs.unchecked)) notes.push_back(std::move(note));
  for (const auto& note : notes) fmt::print(stderr, "mgpr-submit: note: {}\n", note);
  const auto rasters = inputs.local + inputs.remote.size() + inputs.unchecked.size();
  if (rasters > 1) {
    // On stderr: the job id is the first line of stdout (`jobid=$(mgpr-submit ...)`).
    fmt::print(stderr, "mgpr-submit: {} rasters ({} local, {} remote{})\n", rasters, inputs.local, inputs.remote.size(),
               inputs.unchecked.empty() ? std::string() : fmt::format(", {} unchecked", inputs.unchecked.size()));
  }
  make_paths_absolute(request.config);
  request.log_dir = fs::absolute(cli.log_dir).lexically_normal();
  request.mgpr_command = runtime_command();

  const fs::path template_path = cli.template_file.empty() ? default_template() : fs::path(cli.template_file);
  const std::string script =
      render_template(mgpr::read_text_file(template_path), script_values(request), template_path.string());
  if (cli.dry_run) {
    fmt::print("{}", script);
    return 0;
  }

  fs::create_directories(request.log_dir);
  const fs::path pending = request.log_dir / fmt::format(".submit-{}.sbatch", ::getpid());
  mgpr::write_file_atomically(pending, script);
  const auto result = run_command({"sbatch", "--parsable", pending.string()});
  if (result.exit_code != 0) {
    fs::remove(pending);
    fmt::print(stderr, "mgpr-submit: sbatch refused the job:\n{}mgpr-submit: hint: {}\n", result.err,
               refusal_hint(result.err, request));
    return result.exit_code == mgpr::kExitCommandNotFound ? mgpr::kExitCommandNotFound : mgpr::kExitFailure;
  }
  const std::string job_id = result.out.substr(0, result.out.find_first_of(";\n"));
  const mgpr::JobLogLayout layout{request.log_dir, job_id};
  fs::create_directories(layout.job_dir());
  fs::rename(pending, layout.batch_script());
  fmt::print("{}\n", job_id);
  fmt::print(
      stderr, "mgpr-submit: submitted job {}\n  stdout: {}\n  stderr: {}\n  script: {}\n  see:    mgpr-logs {}\n",
      job_id, layout.stdout_log().string(), layout.stderr_log().string(), layout.batch_script().string(), job_id);
  return cli.wait ? wait_for_job(job_id, layout) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli;
  SubmitRequest request;
  CLI::App app{"mgpr-submit: submit an mgpr run to Slurm with one task per GPU on every node."};
  app.set_version_flag("--version", std::string("mgpr-submit ") + mgpr::kVersion);
  app.add_option("--gpus", cli.gpus, "GPUs per node, [TYPE:]N, e.g. a100:2 or 4")->capture_default_str();
  app.add_option("--nodes", request.nodes, "nodes")->check(CLI::Range(1, 4096))->capture_default_str();
  // Given, it must mean something: 0 used to fall back silently to the default.
  app.add_option("--cpus-per-task", request.cpus_per_task, "CPUs per rank (default: 2 per reader worker)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--mem", request.mem, "memory per node (default: 8G per GPU)");
  app.add_option("--time", request.time, "walltime")->capture_default_str();
  app.add_option("--partition", request.partition, "partition");
  app.add_option("--account", request.account, "account");
  app.add_option("--qos", request.qos, "QOS");
  app.add_option("--constraint", request.constraint, "node features");
  app.add_option("--job-name", request.job_name, "job name")->capture_default_str();
  app.add_flag("--exclusive", request.exclusive, "whole nodes");
  // One value per --sbatch-arg, or CLI11 would take every argument after it as another.
  app.add_option("--sbatch-arg", request.sbatch_args, "any other sbatch option, e.g. --sbatch-arg=--reservation=x")
      ->allow_extra_args(false);
  app.add_option("--config", cli.config_file, "TOML run configuration");
  app.add_option("--template", cli.template_file, "job script template (default: the installed mgpr.sbatch)");
  app.add_option("--log-dir", cli.log_dir, "where job logs go")->capture_default_str();
  app.add_flag("--dry-run", cli.dry_run, "print the job script; submit nothing");
  app.add_flag("--wait", cli.wait, "wait for the job, print its summary, exit with its exit code");
  app.add_option("arguments", cli.arguments, "RASTER paths and key=value overrides (as for mgpr)");
  app.footer(mgpr::describe_config_keys());
  if (const auto exit_code = parse_command_line(app, argc, argv)) return *exit_code;
  try {
    return submit(cli, request);
  } catch (const mgpr::UsageError& error) {
    fmt::print(stderr, "mgpr-submit: error: {}\n", error.what());
    return kExitUsage;
  } catch (const mgpr::IoError& error) {
    fmt::print(stderr, "mgpr-submit: failed: {}\n", error.what());
    return mgpr::kExitFailure;
  } catch (const fs::filesystem_error& error) {
    fmt::print(stderr, "mgpr-submit: failed: {}\n", error.what());
    return mgpr::kExitFailure;
  }
}
