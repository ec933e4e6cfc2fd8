// mgpr-submit --gpus TYPE:N (and the plugin's view of a step's GPUs).
#include "fuzz_input.hpp"
#include "mgpr/gpu_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(mgpr::parse_gpu_spec(text)); });
  return 0;
}
