#include "distributed/heartbeat.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "mgpr/env_names.hpp"
#include "mgpr/log_layout.hpp"

namespace mgpr::runtime {
namespace {

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Heartbeat Heartbeat::from_environment() {
  const char* path = std::getenv(env::kProgressFile);
  return Heartbeat(path == nullptr ? std::string() : std::string(path));
}

Heartbeat::Heartbeat(std::string path, std::chrono::milliseconds min_interval)
    : path_(std::move(path)), min_interval_(min_interval) {}

Heartbeat::Heartbeat(const Heartbeat& other)
    : path_(other.path_), min_interval_(other.min_interval_), last_touch_ns_(other.last_touch_ns_.load()) {}

void Heartbeat::arrived() noexcept {
  if (!active()) return;
  // O_TRUNC: an arrival is not finished; futimens then moves the time even if nothing
  // changed, so a re-arrival also counts as progress.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) return;
  (void)::futimens(fd, nullptr);
  ::close(fd);
  last_touch_ns_.store(steady_now_ns());
}

void Heartbeat::progress() noexcept {
  if (!active()) return;
  const std::int64_t now = steady_now_ns();
  std::int64_t last = last_touch_ns_.load(std::memory_order_relaxed);
  const std::int64_t interval = std::chrono::duration_cast<std::chrono::nanoseconds>(min_interval_).count();
  if (last != 0 && now - last < interval) return;
  // One thread of many wins the slot; the others skip rather than touch twice.
  if (!last_touch_ns_.compare_exchange_strong(last, now)) return;
  // Touch only: a file that is missing was never reported as arrived (or the step's
  // folder is already gone), and creating it here would claim an arrival.
  (void)::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);
}

void Heartbeat::finished() noexcept {
  if (!active()) return;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  (void)::write(fd, kProgressFinished.data(), kProgressFinished.size());
  ::close(fd);
}

}  // namespace mgpr::runtime
