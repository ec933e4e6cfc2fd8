#pragma once
// What a call threw, as text, for tests that check a message names its input and says
// how to fix it: "no error" when it threw nothing, so the assertion shows that instead.
#include <string>
#include <utility>

#include "mgpr/error.hpp"

namespace mgpr::test {

template <class Error = UsageError, class Call>
std::string error_of(Call&& call) {
  try {
    std::forward<Call>(call)();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace mgpr::test
