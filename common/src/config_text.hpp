#pragma once
// The configuration as text: TOML values, the --help table, `--cfg job`. Internal to
// common/src; the declarations callers use are in mgpr/config.hpp.
#include <sstream>
#include <vector>

#include "mgpr/config.hpp"

namespace mgpr {

template <class T>
inline constexpr bool is_list_v = false;
template <class Item>
inline constexpr bool is_list_v<std::vector<Item>> = true;

// `key`'s value in `config`, written as TOML.
void append_toml_value(std::ostringstream& out, const RunConfig& config, const ConfigKey& key);

}  // namespace mgpr
