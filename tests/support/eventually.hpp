#pragma once
// Waiting in a test for what another process does a moment later.
#include <chrono>
#include <functional>
#include <thread>

namespace mgpr::test {

// Polls `done` every 0.2 s for up to `seconds`: what a step leaves behind (its
// slurmstepd, the plugin's tidying at step exit) may go a moment after srun returned,
// and a process started by the test takes a moment to listen.
inline bool eventually(double seconds, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

}  // namespace mgpr::test
