#pragma once
// The job users the plugin's file tests act as: the test's own identity, and an
// unprivileged one (`nobody`) for the tests that need root to take it.
#include <grp.h>
#include <unistd.h>

#include "as_job_user.hpp"

namespace mgpr::test {

inline spank::JobUser this_process_user() {
  spank::JobUser user{.uid = ::geteuid(), .gid = ::getegid(), .groups = {}};
  const int count = ::getgroups(0, nullptr);
  user.groups.resize(static_cast<std::size_t>(std::max(count, 0)));
  if (count > 0) ::getgroups(count, user.groups.data());
  return user;
}

inline constexpr uid_t kNobody = 65534;
inline constexpr gid_t kNogroup = 65534;

inline spank::JobUser nobody() { return {.uid = kNobody, .gid = kNogroup, .groups = {kNogroup}}; }

}  // namespace mgpr::test
