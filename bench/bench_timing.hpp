#pragma once
// What the benchmark programs time with: seconds since a moment, and the median of a
// measure's alternated rounds (on a small, shared machine one round is mostly noise).
#include <algorithm>
#include <chrono>
#include <vector>

namespace mgpr::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double median(std::vector<double> values) {
  std::ranges::sort(values);
  const auto middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace mgpr::bench
