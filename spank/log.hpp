#pragma once
// Every message leaves through Slurm's own logging with the plugin's prefix, so users
// see it in srun's output and administrators in slurmd's log.
#include <fmt/format.h>
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

}  // namespace mgpr::spank
