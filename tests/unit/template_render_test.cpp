#include "template_render.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include <fmt/format.h>

#include "mgpr/error.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr/log_layout.hpp"
#include "sbatch_script.hpp"
#include "support/error_of.hpp"

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
TEST(TemplateRender, TheJobTemplateRequeuesOnTheRuntimesStoppedExitCode) {
  mgpr::launcher::SubmitRequest request;
  request.log_dir = "/scratch/logs";
  request.mgpr_command = "/usr/bin/mgpr";
  request.config.use_fake_data = true;
  const auto path = std::string(MGPR_SOURCE_DIR) + "/templates/mgpr.sbatch";
  const auto script =
      render_template(mgpr::read_text_file(path), mgpr::launcher::script_values(request), "mgpr.sbatch");
  // 128 + USR2 too: a rank the walltime signal reached before its handler was ended by it.
  const auto requeue_test =
      fmt::format("if [ \"$status\" -eq {} ] || [ \"$status\" -eq {} ]; then", mgpr::kExitStopped, 128 + SIGUSR2);
  const auto at = script.find(requeue_test);
  ASSERT_NE(at, std::string::npos) << script;
  EXPECT_NE(script.find("scontrol requeue", at), std::string::npos) << script;
}

}  // namespace
