#include "resume/stop_request.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <initializer_list>

#include "mgpr/error.hpp"

namespace mgpr::runtime {
namespace {

std::atomic<int> requested_by{0};

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  if (!requested_by.compare_exchange_strong(expected, signal_number)) {
    // Asked twice: the default action, now.
    ::signal(signal_number, SIG_DFL);
    ::raise(signal_number);
  }
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (const int signal_number : {SIGTERM, SIGUSR2, SIGINT}) ::sigaction(signal_number, &action, nullptr);
}

int stop_signal() { return requested_by.load(); }

void say_stop_or_rethrow(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const StoppedOnRequest& stopped) {
    fmt::print(stderr, "mgpr: {}\n", stopped.what());
  }
}

}  // namespace mgpr::runtime
