// What mgpr-logs and mgpr-submit --wait read from Slurm: scontrol's and sacct's records.
#include "fuzz_input.hpp"
#include "job_state.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  using namespace mgpr::launcher;
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_scontrol_job(text)); });
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_sacct_records(text, "1234", "sacct")); });
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_sacct_records(text, "1234_7", "sacct")); });
  int code = 0;
  int signal = 0;
  mgpr::fuzz::refusing_is_fine([&] { static_cast<void>(parse_exit_code(text, code, signal)); });
  return 0;
}
