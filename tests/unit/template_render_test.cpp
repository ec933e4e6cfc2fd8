#include "template_render.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "mgpr/rank_endings.hpp"
#include "sbatch_script.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"

namespace {

using mgpr::launcher::render_template;

std::string error_of(std::string_view text, const mgpr::launcher::TemplateValues& values) {
  return mgpr::test::error_of([&] { render_template(text, values, "custom.sbatch"); });
}

TEST(TemplateRender, Substitutes) {
  EXPECT_EQ(render_template("a {{x}} b {{y}}{{x}}", {{"x", "1"}, {"y", "2"}}, "t"), "a 1 b 21");
}

TEST(TemplateRender, UnknownPlaceholderIsNamedWithLine) {
  const auto message = error_of("line1\n{{nodez}}\n", {{"nodes", "1"}});
  EXPECT_NE(message.find("custom.sbatch' line 2: unknown placeholder {{nodez}}"), std::string::npos) << message;
  EXPECT_NE(message.find("{{nodes}}"), std::string::npos) << message;
}

TEST(TemplateRender, MissingPlaceholderIsAnError) {
  const auto message = error_of("{{nodes}}", {{"nodes", "1"}, {"ntasks_per_node", "2"}});
  EXPECT_NE(message.find("lacks placeholder(s) {{ntasks_per_node}}"), std::string::npos) << message;
}

TEST(TemplateRender, UnclosedPlaceholder) {
  EXPECT_NE(error_of("{{nodes", {{"nodes", "1"}}).find("never closed"), std::string::npos);
}

// The job template's requeue test is rendered from the one definition of "stopped,
// resumable", so the template and the runtime cannot disagree on it.
std::string job_script(const std::filesystem::path& log_dir) {
  mgpr::launcher::SubmitRequest request;
  request.log_dir = log_dir;
  request.mgpr_command = "/usr/bin/mgpr";
  request.config.use_fake_data = true;
  const auto path = std::string(MGPR_SOURCE_DIR) + "/templates/mgpr.sbatch";
  return render_template(mgpr::read_text_file(path), mgpr::launcher::script_values(request), "mgpr.sbatch");
}

TEST(TemplateRender, TheJobTemplateRequeuesOnTheRuntimesStoppedExitCode) {
  const auto script = job_script("/scratch/logs");
  // 128 + USR2 too: a rank the walltime signal reached before its handler was ended by it.
  const auto requeue_test =
      fmt::format("if [ \"$status\" -eq {} ] || [ \"$status\" -eq {} ]; then", mgpr::kExitStopped, 128 + SIGUSR2);
  const auto at = script.find(requeue_test);
  ASSERT_NE(at, std::string::npos) << script;
  EXPECT_NE(script.find("scontrol requeue", at), std::string::npos) << script;
}

// The rendered job script run by bash, with an srun that leaves the plugin's word for
// each ending and exits as a killed task does, and an scontrol that records requeues:
// the script requeues exactly the endings the table says can be mended by running again.
TEST(TemplateRender, TheJobScriptRequeuesAnEarlyDeathOnlyWhereTheTableSaysItHelps) {
  namespace fs = std::filesystem;
  const mgpr::test::TempDir scratch("mgpr-job-script-");
  const auto bin = scratch.path() / "bin";
  fs::create_directories(bin);
  const auto write_program = [&](const std::string& name, const std::string& body) {
    std::ofstream(bin / name) << "#!/bin/bash\n" << body << "\n";
    fs::permissions(bin / name, fs::perms::owner_all);
  };
  // A peer that failed after the rank's death is written first, as the plugin on another
  // node may: the script still acts on the cause.
  write_program("srun",
                "printf '0 failed 3 node1\\n0 %s 1 node2\\n' \"$ENDING\" >\"$MGPR_LOG_DIR/endings.log\"; exit 137");
  write_program("scontrol", "echo \"$*\" >>\"$MGPR_LOG_DIR/../scontrol.log\"");
  const auto script_file = scratch.path() / "job.sbatch";
  std::ofstream(script_file) << job_script(scratch.path() / "logs");
  for (const auto& row : mgpr::kRankEndings) {
    for (const int restarts : {0, mgpr::kRequeuesAfterAKill}) {
      fs::remove(scratch.path() / "logs" / "scontrol.log");
      const auto run = mgpr::run_command({"env", "PATH=" + bin.string() + ":/usr/bin:/bin", "SLURM_JOB_ID=7",
                                          "SLURM_RESTART_COUNT=" + std::to_string(restarts),
                                          "ENDING=" + std::string(row.word), "bash", script_file.string()});
      EXPECT_EQ(run.exit_code, 137) << row.word << run.err;
      const bool requeued = fs::exists(scratch.path() / "logs" / "scontrol.log");
      EXPECT_EQ(requeued, row.requeue && restarts < mgpr::kRequeuesAfterAKill) << row.word << " after " << restarts;
      EXPECT_TRUE(mgpr::test::contains(run.err, std::string(row.why))) << row.word << run.err;
      EXPECT_TRUE(mgpr::test::contains(run.err, requeued ? "mgpr: requeueing job 7" : "mgpr: not requeueing job 7"))
          << run.err;
    }
  }
}

}  // namespace
