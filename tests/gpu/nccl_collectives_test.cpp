// The NCCL backend, only where CUDA sees a device; elsewhere each test is skipped with
// the reason. Two NCCL ranks cannot share one GPU (NCCL refuses duplicate devices), so
// the multi-rank tests need two GPUs; on one, the one-rank test still runs NCCL itself.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "distributed/collectives.hpp"
#include "support/comm_payload.hpp"
#include "support/process.hpp"

namespace mgpr::runtime {
namespace {

int visible_devices() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  return fmt::format("no CUDA device visible ({})", status == cudaSuccess ? "0 devices" : cudaGetErrorString(status));
}

// The store the ranks of one process share (the TCPStore's role across processes).
class MemoryStore final : public KeyValueStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    {
      const std::lock_guard lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
  }
  std::string get(const std::string& key) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return values_.contains(key); });
    return values_.at(key);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

TEST(NcclCollectives, OneRankGathersItsOwnBytes) {
  if (visible_devices() < 1) GTEST_SKIP() << no_device_reason();
  MemoryStore store;
  const auto nccl = make_nccl_collectives(store, 0, 1, 0);
  nccl->barrier();
  const std::string bytes("tile\0summary", 12);
  EXPECT_EQ(nccl->all_gather(bytes), std::vector<std::string>{bytes});
  EXPECT_EQ(nccl->all_gather(""), std::vector<std::string>{""});
}

TEST(NcclCollectives, TwoRanksOnTwoGpusGatherUnequalSizes) {
  if (visible_devices() < 2)
    GTEST_SKIP() << "needs 2 GPUs (NCCL refuses two ranks on one); " << visible_devices() << " visible";
  MemoryStore store;
  std::vector<std::vector<std::string>> gathered(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        const auto nccl = make_nccl_collectives(store, rank, 2, rank);
        nccl->barrier();
        gathered[static_cast<std::size_t>(rank)] = nccl->all_gather(test::gather_payload(rank));
      } catch (const std::exception& error) {
        errors[static_cast<std::size_t>(rank)] = error.what();
      }
    });
  }
  for (auto& thread : ranks) thread.join();
  const std::vector<std::string> expected = {test::gather_payload(0), test::gather_payload(1)};
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(gathered[r], expected) << "rank " << r;
  }
}

TEST(NcclCollectives, LocalRanksOneGpuEachJoinThroughTheStore) {
  if (visible_devices() < 2)
    GTEST_SKIP() << "needs 2 GPUs (NCCL refuses two ranks on one); " << visible_devices() << " visible";
  const test::TempDir dir;
  const auto result = test::run({MGPR_COMM_RANK_EXE, "launch", "2", "gpu-each", "--", "out=" + dir.path().string(),
                                 "gpu=1", "gather=1", "timeout=60"},
                                {}, dir.path(), std::chrono::seconds(180));
  ASSERT_EQ(result.code, 0) << result.err;
  for (int r = 0; r < 2; ++r) {
    const auto text = test::read_text(dir.path() / fmt::format("rank-{}.txt", r));
    for (int from = 0; from < 2; ++from) {
      const auto payload = test::gather_payload(from);
      EXPECT_NE(text.find(fmt::format("gathered {} {} {}", from, payload.size(), test::fnv1a(payload))),
                std::string::npos)
          << text;
    }
  }
}

}  // namespace
}  // namespace mgpr::runtime
