// The texts the plugin reads in slurmstepd as root to find a step's memory cgroup:
// /proc/self/cgroup and /proc/self/mountinfo (the part before and after a line holding
// "--"), and an oom_kill counter. Kernel-made, but a path in them is whatever a cgroup
// or mount was named.
#include "fuzz_input.hpp"
#include "step_memory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  using namespace mgpr::spank;
  const auto split = text.find("\n--\n");
  const auto cgroup = text.substr(0, split);
  const auto mountinfo = split == std::string_view::npos ? std::string_view{} : text.substr(split + 4);
  static_cast<void>(oom_kill_count(text));
  const auto place = memory_cgroup(cgroup);
  if (!place) return 0;
  if (place->path.empty() || place->path.front() != '/') __builtin_trap();  // a place is an absolute path
  if (const auto folder = cgroup_folder(mountinfo, *place)) static_cast<void>(step_folder(*folder, 0));
  return 0;
}
