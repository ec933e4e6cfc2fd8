#pragma once
// Whether a step's tasks were killed for memory: the out-of-memory kills its memory
// cgroup counts ("oom_kill" in memory.oom_control under cgroup v1, memory.events under
// v2; the kernel adds a kill to the victim's cgroup and its ancestors). Slurm's
// task/cgroup puts slurmstepd inside the step's cgroup, so the step's folder is found
// from slurmstepd's own cgroup (/proc/self/cgroup) and where that hierarchy is mounted
// (/proc/self/mountinfo). Only kernel-made files are read; nothing comes from the job.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace mgpr::spank {

struct CgroupPlace {
  bool unified = false;  // cgroup v2
  std::string path;      // from the hierarchy's root, as /proc/self/cgroup gives it
};

// The memory controller's cgroup in /proc/self/cgroup's text: the v1 line naming
// "memory", else the v2 line ("0::/path"). nullopt when neither is there.
std::optional<CgroupPlace> memory_cgroup(std::string_view proc_self_cgroup);

// Where `place` is in this mount namespace, from /proc/self/mountinfo's text: the
// memory hierarchy's mount (v1: type cgroup with the memory option; v2: cgroup2) whose
// root holds the path. nullopt when no mount shows it.
std::optional<std::filesystem::path> cgroup_folder(std::string_view mountinfo, const CgroupPlace& place);

// The step's folder: the nearest of `folder` and its parents named step_<id>; nullopt
// when there is none (the step runs without task/cgroup or proctrack/cgroup).
std::optional<std::filesystem::path> step_folder(const std::filesystem::path& folder, std::uint32_t step_id);

// The "oom_kill N" count in a memory.oom_control or memory.events text; nullopt when
// the kernel does not count them (before 4.13 under v1).
std::optional<std::uint64_t> oom_kill_count(std::string_view events_text);

// Reads the out-of-memory kills of the step's cgroup and the cgroups below it (its tasks'),
// for this process (slurmstepd) in its step cgroup. nullopt when they cannot be known.
class StepMemory {
 public:
  static std::optional<StepMemory> of_this_step(std::uint32_t step_id);
  [[nodiscard]] std::optional<std::uint64_t> oom_kills() const;
  [[nodiscard]] const std::filesystem::path& events_file() const { return events_file_; }

 private:
  explicit StepMemory(std::filesystem::path events_file) : events_file_(std::move(events_file)) {}
  std::filesystem::path events_file_;
};

}  // namespace mgpr::spank
