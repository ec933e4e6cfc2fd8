#pragma once
// One exception type for every user-facing mistake (bad config, bad GPU spec, bad
// environment): its message is printed as is, so it must name the input, say what is
// wrong and how to fix it.
#include <stdexcept>
#include <string>

namespace mgpr {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mgpr
