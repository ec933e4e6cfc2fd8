#include "template_render.hpp"

#include <gtest/gtest.h>

#include "mgpr/error.hpp"

namespace {

using mgpr::launcher::render_template;

std::string error_of(std::string_view text, const mgpr::launcher::TemplateValues& values) {
  try {
    render_template(text, values, "custom.sbatch");
  } catch (const mgpr::UsageError& error) {
    return error.what();
  }
  return "no error";
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

}  // namespace
