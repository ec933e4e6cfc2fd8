#pragma once
// Every message leaves through Slurm's own logging with the plugin's prefix, so users
// see it in srun's output and administrators in slurmd's log.
#include <fmt/format.h>

#include <exception>
#include <string_view>
#include <type_traits>

#include "diagnoses.hpp"
#include "slurm_api.hpp"

namespace mgpr::spank {

template <class... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  slurm_error("mgpr: %s", fmt::format(format, std::forward<Args>(args)...).c_str());
}

template <class... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  slurm_info("mgpr: %s", fmt::format(format, std::forward<Args>(args)...).c_str());
}

template <class... Args>
void log_verbose(fmt::format_string<Args...> format, Args&&... args) {
  slurm_verbose("mgpr: %s", fmt::format(format, std::forward<Args>(args)...).c_str());
}

// How a guarded body's error is logged: "where: what", or the message alone when it
// already names its input (the option parsers' "--mgpr-timeout: ..." messages).
enum class ErrorPrefix { kWhere, kNone };

// The one boundary between C++ and Slurm's C: runs `body` (returning int, or void for
// 0) and turns anything it throws into a logged error and -1. Even the logging is
// guarded: formatting may throw (memory) and nothing may unwind into Slurm.
template <class Body>
int guarded(std::string_view where, ErrorPrefix prefix, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
      body();
      return 0;
    } else {
      return body();
    }
  } catch (const std::exception& error) {
    try {
      if (prefix == ErrorPrefix::kWhere) {
        log_error("{}: {}", where, error.what());
      } else {
        log_error("{}", error.what());
      }
    } catch (...) {
    }
  } catch (...) {
    try {
      log_error("{}: unexpected error", where);
    } catch (...) {
    }
  }
  return -1;
}

// append_diagnosis, and when the file cannot take it, says so in Slurm's log instead:
// the finding itself was already logged, and the step must go on being handled.
inline void record_diagnosis(const JobUser& user, const std::filesystem::path& log_dir,
                             std::string_view message) noexcept {
  guarded("diagnoses", ErrorPrefix::kNone, [&] {
    try {
      append_diagnosis(user, log_dir, message);
    } catch (const std::exception& error) {
      log_error("could not record the diagnosis in {}: {}", log_dir.string(), error.what());
    }
  });
}

}  // namespace mgpr::spank
