#include "template_render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <vector>

#include "mgpr/error.hpp"

namespace mgpr::launcher {

std::string render_template(std::string_view text, const TemplateValues& values, std::string_view template_name) {
  std::string out;
  std::set<std::string, std::less<>> used;
  std::size_t position = 0;
  while (true) {
    const auto open = text.find("{{", position);
    if (open == std::string_view::npos) break;
    const auto close = text.find("}}", open + 2);
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(open), '\n');
    if (close == std::string_view::npos) {
      throw UsageError(fmt::format("template '{}' line {}: '{{{{' is never closed with '}}}}'", template_name, line));
    }
    const auto name = text.substr(open + 2, close - open - 2);
    const auto value = values.find(name);
    if (value == values.end()) {
      std::vector<std::string> known;
      for (const auto& [key, unused] : values) known.push_back("{{" + key + "}}");
      throw UsageError(fmt::format("template '{}' line {}: unknown placeholder {{{{{}}}}}; known: {}", template_name,
                                   line, name, fmt::join(known, " ")));
    }
    out.append(text.substr(position, open - position));
    out.append(value->second);
    used.insert(value->first);
    position = close + 2;
  }
  out.append(text.substr(position));
  std::vector<std::string> missing;
  for (const auto& [key, unused] : values) {
    if (!used.contains(key)) missing.push_back("{{" + key + "}}");
  }
  if (!missing.empty()) {
    throw UsageError(
        fmt::format("template '{}' lacks placeholder(s) {}; a job script without them would not run "
                    "the job as asked",
                    template_name, fmt::join(missing, " ")));
  }
  return out;
}

}  // namespace mgpr::launcher
