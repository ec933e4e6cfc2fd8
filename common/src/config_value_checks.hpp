#pragma once
// The checks of one key's value, whichever way it came (key=value or TOML): range,
// finiteness, choices, UTF-8. Checks across keys are config_validate.cpp's.
#include <string>
#include <string_view>
#include <vector>

#include "mgpr/config.hpp"

namespace mgpr {

// Each throws UsageError naming `where` and the key.
inline void check_value(const ConfigKey& /*key*/, bool /*value*/, std::string_view /*where*/) {}
void check_value(const ConfigKey& key, int value, std::string_view where);
void check_value(const ConfigKey& key, double value, std::string_view where);
void check_value(const ConfigKey& key, const std::string& value, std::string_view where);
void check_value(const ConfigKey& key, const std::vector<int>& value, std::string_view where);
void check_value(const ConfigKey& key, const std::vector<double>& value, std::string_view where);
void check_value(const ConfigKey& key, const std::vector<std::string>& value, std::string_view where);

}  // namespace mgpr
