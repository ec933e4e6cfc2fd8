// Configuration from outside: key=value overrides (Hydra's grammar) on every line, or,
// when the input starts with '#', the whole input as a TOML file; then validation and
// the TOML the launcher writes back, which must read back to the same settings.
#include "fuzz_input.hpp"
#include "mgpr/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  mgpr::RunConfig config;
  mgpr::fuzz::refusing_is_fine([&] {
    if (text.starts_with('#')) {
      mgpr::apply_toml_text(config, text, "fuzz.toml");
    } else {
      for (const auto& line : mgpr::fuzz::lines_of(text)) {
        if (mgpr::looks_like_override(line)) {
          mgpr::apply_override(config, line);
        } else {
          static_cast<void>(mgpr::nearest_config_keys(line));
        }
      }
    }
    mgpr::validate(config);
    mgpr::RunConfig again;
    mgpr::apply_toml_text(again, mgpr::to_toml(config), "written.toml");
    if (mgpr::to_toml(again) != mgpr::to_toml(config)) __builtin_trap();  // what is written must read back
  });
  return 0;
}
