// The plugin's outside input, parsed in srun and in slurmstepd as root: plugstack.conf
// arguments (one per line) and the --mgpr-* option values.
#include "fuzz_input.hpp"
#include "plugstack_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  using namespace mgpr::spank;
  mgpr::fuzz::refusing_is_fine([&] {
    const auto args = mgpr::fuzz::lines_of(text);
    const auto config = parse_plugstack_config(args);
    if (config.port_min > config.port_max) __builtin_trap();  // a range that was accepted is a range
  });
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_seconds(text, "--mgpr-timeout")); });
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_port(text, "--mgpr-port")); });
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_bind(text, "--mgpr-bind")); });
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_rank_loss(text, "--mgpr-on-rank-loss")); });
  return 0;
}
