// A user's job script template (mgpr-submit --template FILE).
#include "fuzz_input.hpp"
#include "template_render.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  static const mgpr::launcher::TemplateValues values{
      {"job_name", "mgpr"}, {"nodes", "1"}, {"mgpr_command", "mgpr"}, {"config_toml", "a = 1\n"}};
  mgpr::fuzz::refusing_is_fine(
      [&] { static_cast<void>(mgpr::launcher::render_template(text, values, "fuzz.sbatch")); });
  return 0;
}
