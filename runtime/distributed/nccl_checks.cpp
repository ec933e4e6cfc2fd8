#include "distributed/nccl_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "distributed/rendezvous_diagnoses.hpp"

namespace mgpr::runtime {

std::string format_nccl_version(int code) {
  // NCCL_VERSION(X, Y, Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z since 2.9.
  if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

std::optional<std::string> nccl_version_mismatch(const std::vector<int>& versions) {
  std::map<int, std::vector<int>> ranks_by_version;
  for (std::size_t r = 0; r < versions.size(); ++r) ranks_by_version[versions[r]].push_back(static_cast<int>(r));
  if (ranks_by_version.size() <= 1) return std::nullopt;
  std::string groups;
  for (const auto& [version, ranks] : ranks_by_version) {
    if (!groups.empty()) groups += ", ";
    groups += fmt::format("{} {} NCCL {}", ranks.size() == 1 ? "rank" : "ranks", format_rank_list(ranks),
                          format_nccl_version(version));
  }
  return fmt::format(
      "the ranks loaded different NCCL libraries ({}), which cannot work together. Run every rank with the same "
      "NCCL: the same container image or environment module on every node, and no LD_LIBRARY_PATH that picks "
      "another libnccl on some of them",
      groups);
}

std::optional<std::string> shared_gpu_message(const std::vector<GpuClaim>& claims) {
  std::map<std::string, std::vector<const GpuClaim*>> by_uuid;
  for (const auto& claim : claims) by_uuid[claim.uuid].push_back(&claim);
  // The lowest rank's GPU first, so every rank that looks reports the same one.
  const std::vector<const GpuClaim*>* shared = nullptr;
  int lowest = 0;
  for (const auto& [uuid, holders] : by_uuid) {
    if (holders.size() < 2) continue;
    const int first = (*std::min_element(holders.begin(), holders.end(), [](const auto* a, const auto* b) {
                        return a->rank < b->rank;
                      }))->rank;
    if (shared == nullptr || first < lowest) {
      shared = &holders;
      lowest = first;
    }
  }
  if (shared == nullptr) return std::nullopt;
  std::vector<int> ranks;
  for (const auto* claim : *shared) ranks.push_back(claim->rank);
  std::sort(ranks.begin(), ranks.end());
  const auto* any = shared->front();
  const auto named = ranks.size() == 2 ? fmt::format("{} and {}", ranks[0], ranks[1]) : format_rank_list(ranks);
  return fmt::format(
      "ranks {} all run on the same GPU, {} on host {}: each rank needs a GPU of its own (NCCL refuses two ranks "
      "on one, and they would split its memory). Start one task per GPU: srun --ntasks-per-node equal to the GPUs "
      "per node with --gpus-per-task=1, or give each rank its own CUDA_VISIBLE_DEVICES; mgpr gpus=N does so "
      "itself",
      named, any->uuid, any->host);
}

}  // namespace mgpr::runtime
