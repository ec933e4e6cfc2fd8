#pragma once
// {{name}} placeholders in job script templates. Every placeholder in the template must
// have a value and every value a placeholder, so a custom template that misspells one
// fails at submit time rather than producing a broken job.
#include <map>
#include <string>
#include <string_view>

namespace mgpr::launcher {

using TemplateValues = std::map<std::string, std::string, std::less<>>;

// Throws UsageError naming `template_name` and the placeholder at fault.
std::string render_template(std::string_view text, const TemplateValues& values, std::string_view template_name);

}  // namespace mgpr::launcher
