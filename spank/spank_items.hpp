#pragma once
// Typed access to what Slurm hands a SPANK plugin, so the context files read like the
// decisions they make. Each returns nullopt where Slurm has no such item or variable in
// the current context (see docs/spank.md for what each context offers).
#include <cstdint>
#include <optional>
#include <string>

#include "as_job_user.hpp"
#include "slurm_api.hpp"

namespace mgpr::spank {

class SpankItems {
 public:
  explicit SpankItems(spank_t spank) : spank_(spank) {}

  [[nodiscard]] std::optional<std::uint32_t> job_id() const { return u32(S_JOB_ID); }
  [[nodiscard]] std::optional<std::uint32_t> step_id() const { return u32(S_JOB_STEPID); }
  [[nodiscard]] std::optional<std::uint32_t> node_id() const { return u32(S_JOB_NODEID); }
  [[nodiscard]] std::optional<std::uint32_t> local_task_count() const { return u32(S_JOB_LOCAL_TASK_COUNT); }
  [[nodiscard]] std::optional<std::uint32_t> total_task_count() const { return u32(S_JOB_TOTAL_TASK_COUNT); }
  [[nodiscard]] std::optional<std::uint32_t> task_global_id() const { return u32(S_TASK_GLOBAL_ID); }
  [[nodiscard]] std::optional<int> task_local_id() const;
  [[nodiscard]] std::optional<int> task_exit_status() const;  // a wait() status, in task_exit
  [[nodiscard]] std::optional<std::uint32_t> global_id_of_local_task(std::uint32_t local_id) const;
  // The job's user: uid, gid and supplementary groups (remote context).
  [[nodiscard]] std::optional<JobUser> job_user() const;

  // The job's (remote context: the task's) environment, not the plugin process's own.
  [[nodiscard]] std::optional<std::string> getenv(const char* name) const;
  // Throws UsageError naming the variable when Slurm refuses.
  void setenv(const std::string& name, const std::string& value) const;

 private:
  [[nodiscard]] std::optional<std::uint32_t> u32(spank_item_t item) const;
  spank_t spank_;
};

// The first host of a Slurm node list ("node[03-05],gpu1" -> "node03"), through
// Slurm's hostlist API so every range syntax Slurm writes is understood.
std::optional<std::string> slurm_first_host(const std::string& node_list);

}  // namespace mgpr::spank
