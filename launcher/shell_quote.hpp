#pragma once
#include <string>
#include <string_view>

namespace mgpr::launcher {

// One POSIX shell word that expands to exactly `text`, whatever bytes it holds.
std::string shell_quote(std::string_view text);

}  // namespace mgpr::launcher
