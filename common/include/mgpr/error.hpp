#pragma once
// How work ends early, each with its exit status (mgpr/exit_codes.hpp). UsageError: the
// input is wrong (bad config, bad GPU spec, bad environment), exit 2; its message is
// printed as is, so it must name the input, say what is wrong and how to fix it.
// IoError: the input was fine but the machine failed us (disk full, folder unwritable),
// exit 1 like any failure. StoppedOnRequest: a stop was asked for (walltime, scancel)
// and the work ended cleanly with nothing half-written, exit 3: run again to finish.
#include <stdexcept>
#include <string>

namespace mgpr {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoppedOnRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mgpr
