#include "distributed/nccl_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "distributed/rendezvous_diagnoses.hpp"

namespace mgpr::runtime {
namespace {

// Pinned host memory is locked in whole pages anyway; smaller sizes only add reallocations.
constexpr std::size_t kStagingPage = 4096;

}  // namespace

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

std::size_t staging_capacity(std::size_t held, std::size_t needed) {
  if (needed <= held) return held;
  constexpr auto kMost = std::numeric_limits<std::size_t>::max();
  const std::size_t doubled = held <= kMost / 2 ? held * 2 : kMost;
  const std::size_t wanted = std::max({needed, doubled, kStagingPage});
  // Rounding up past the largest size would wrap to a buffer smaller than asked for.
  if (wanted > kMost - (kStagingPage - 1)) return needed;
  return (wanted + kStagingPage - 1) / kStagingPage * kStagingPage;
}

GatherLayout gather_layout(const std::vector<std::int64_t>& lengths) {
  GatherLayout layout;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] < 0) {
      throw std::runtime_error(fmt::format("rank {} reported a length of {} bytes to gather", r, lengths[r]));
    }
    layout.padded = std::max(layout.padded, static_cast<std::size_t>(lengths[r]));
  }
  const std::size_t ranks = std::max<std::size_t>(lengths.size(), 1);
  if (layout.padded > std::numeric_limits<std::size_t>::max() / ranks) {
    throw std::runtime_error(
        fmt::format("{} ranks of {} bytes each are more than memory holds to gather", ranks, layout.padded));
  }
  layout.total = layout.padded * ranks;
  return layout;
}

std::vector<std::string> split_gathered(std::string_view gathered, const GatherLayout& layout,
                                        const std::vector<std::int64_t>& lengths) {
  if (gathered.size() < layout.padded * lengths.size()) {
    throw std::runtime_error(fmt::format("{} gathered bytes cannot hold {} ranks of {} bytes", gathered.size(),
                                         lengths.size(), layout.padded));
  }
  std::vector<std::string> each;
  each.reserve(lengths.size());
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const auto length = std::min(layout.padded, static_cast<std::size_t>(std::max<std::int64_t>(lengths[r], 0)));
    each.emplace_back(gathered.substr(r * layout.padded, length));
  }
  return each;
}

}  // namespace mgpr::runtime
