#include "spank_items.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "mgpr/error.hpp"

extern "C" {
#include <slurm/slurm.h>
}

namespace mgpr::spank {
namespace {

// Environment values longer than this are not ours to read (a path list, a key): the
// plugin only reads short Slurm-set values and paths.
constexpr int kMaxValueBytes = 1 << 20;

struct HostlistDeleter {
  void operator()(hostlist* list) const { slurm_hostlist_destroy(list); }
};
// Slurm 22.05 allocates shifted host names with malloc (strdup), so free() returns them.
struct MallocDeleter {
  void operator()(char* text) const { std::free(text); }
};

}  // namespace

std::optional<std::uint32_t> SpankItems::u32(spank_item_t item) const {
  std::uint32_t value = 0;
  if (spank_get_item(spank_, item, &value) != ESPANK_SUCCESS) return std::nullopt;
  return value;
}

std::optional<int> SpankItems::task_local_id() const {
  int value = 0;
  if (spank_get_item(spank_, S_TASK_ID, &value) != ESPANK_SUCCESS) return std::nullopt;
  return value;
}

std::optional<int> SpankItems::task_exit_status() const {
  int value = 0;
  if (spank_get_item(spank_, S_TASK_EXIT_STATUS, &value) != ESPANK_SUCCESS) return std::nullopt;
  return value;
}

std::optional<std::uint32_t> SpankItems::global_id_of_local_task(std::uint32_t local_id) const {
  std::uint32_t global_id = 0;
  if (spank_get_item(spank_, S_JOB_LOCAL_TO_GLOBAL_ID, local_id, &global_id) != ESPANK_SUCCESS) return std::nullopt;
  return global_id;
}

std::optional<JobUser> SpankItems::job_user() const {
  JobUser user;
  if (spank_get_item(spank_, S_JOB_UID, &user.uid) != ESPANK_SUCCESS) return std::nullopt;
  if (spank_get_item(spank_, S_JOB_GID, &user.gid) != ESPANK_SUCCESS) return std::nullopt;
  gid_t* groups = nullptr;
  int count = 0;
  if (spank_get_item(spank_, S_JOB_SUPPLEMENTARY_GIDS, &groups, &count) == ESPANK_SUCCESS && groups != nullptr) {
    user.groups.assign(groups, groups + std::max(count, 0));
  }
  return user;
}

std::optional<std::string> SpankItems::getenv(const char* name) const {
  std::vector<char> buffer(256);
  while (true) {
    const auto rc = spank_getenv(spank_, name, buffer.data(), static_cast<int>(buffer.size()));
    if (rc == ESPANK_SUCCESS) return std::string(buffer.data());
    if (rc != ESPANK_NOSPACE || buffer.size() >= kMaxValueBytes) return std::nullopt;
    buffer.resize(buffer.size() * 2);
  }
}

void SpankItems::setenv(const std::string& name, const std::string& value) const {
  const auto rc = spank_setenv(spank_, name.c_str(), value.c_str(), 1);
  if (rc != ESPANK_SUCCESS) {
    throw UsageError(fmt::format("cannot set {}={}: {}", name, value, spank_strerror(rc)));
  }
}

std::optional<std::string> slurm_first_host(const std::string& node_list) {
  const std::unique_ptr<hostlist, HostlistDeleter> hosts(slurm_hostlist_create(node_list.c_str()));
  if (!hosts) return std::nullopt;
  const std::unique_ptr<char, MallocDeleter> first(slurm_hostlist_shift(hosts.get()));
  if (!first) return std::nullopt;
  return std::string(first.get());
}

}  // namespace mgpr::spank
