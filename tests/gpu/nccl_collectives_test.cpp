// The NCCL backend, only where CUDA sees a device; elsewhere each test is skipped with
// the reason. Two NCCL ranks cannot share one GPU (NCCL refuses duplicate devices), so
// the multi-rank tests need two GPUs; on one, the one-rank tests still run NCCL itself,
// and one rank of a world of two shows the deadline naming the rank that never came.
// Each deadline test also bounds the time from the deadline to the error: an unbounded
// wait in CUDA (a copy into pageable memory, a free under a running kernel) shows there.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "distributed/collectives.hpp"
#include "mgpr/error.hpp"
#include "support/comm_payload.hpp"
#include "support/memory_store.hpp"
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

using test::MemoryStore;

NcclSetup setup_of(int rank, int world_size, int device_index,
                   std::chrono::milliseconds timeout = std::chrono::minutes(1)) {
  NcclSetup setup;
  setup.rank = rank;
  setup.world_size = world_size;
  setup.device_index = device_index;
  setup.timeout = timeout;
  return setup;
}

TEST(NcclCollectives, OneRankGathersItsOwnBytes) {
  if (visible_devices() < 1) GTEST_SKIP() << no_device_reason();
  MemoryStore store;
  const auto nccl = make_nccl_collectives(store, setup_of(0, 1, 0));
  nccl->barrier();
  const std::string bytes("tile\0summary", 12);
  EXPECT_EQ(nccl->all_gather(bytes), std::vector<std::string>{bytes});
  EXPECT_EQ(nccl->all_gather(""), std::vector<std::string>{""});
}

// The communicator stages bytes in pinned host and device buffers it keeps: payloads past
// their first size grow them (between collectives), and every byte still comes back.
TEST(NcclCollectives, OneRankGathersPayloadsThatOutgrowItsBuffers) {
  if (visible_devices() < 1) GTEST_SKIP() << no_device_reason();
  MemoryStore store;
  const auto nccl = make_nccl_collectives(store, setup_of(0, 1, 0));
  for (const std::size_t size : {std::size_t{0}, std::size_t{4096}, std::size_t{4097}, std::size_t{3} << 20,
                                 std::size_t{5}, std::size_t{9} << 20}) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + size) % 251);
    const auto gathered = nccl->all_gather(bytes);
    ASSERT_EQ(gathered.size(), 1U);
    EXPECT_TRUE(gathered[0] == bytes) << "a payload of " << size << " bytes came back changed";
    nccl->barrier();
  }
}

// Rank 0 of a world of two whose rank 1 never comes: the set-up ends at its deadline
// with the missing rank named, instead of waiting for good.
std::string error_of_lone_rank(MemoryStore& store, std::chrono::milliseconds timeout, double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  std::string error = "no error";
  try {
    make_nccl_collectives(store, setup_of(0, 2, 0, timeout));
  } catch (const IoError& failure) {
    error = failure.what();
  }
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return error;
}

TEST(NcclCollectives, OneRankOfTwoTimesOutNamingTheRankThatNeverCame) {
  if (visible_devices() < 1) GTEST_SKIP() << no_device_reason();
  MemoryStore store;
  double seconds = 0;
  const auto error = error_of_lone_rank(store, std::chrono::seconds(3), seconds);
  EXPECT_NE(error.find("rank 0: the NCCL communicator on CUDA device 0 could not be set up: the NCCL set-up"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("did not finish within 3 s: rank 1 never came to it"), std::string::npos) << error;
  EXPECT_LT(seconds, 3 + 5.0);
}

// Rank 1 seems to have come (its version is there) but never creates its communicator:
// rank 0's non-blocking creation is aborted at the deadline, naming it.
TEST(NcclCollectives, CommunicatorCreationWithoutThePeerIsAbortedAtItsDeadline) {
  if (visible_devices() < 1) GTEST_SKIP() << no_device_reason();
  MemoryStore store;
  store.set("nccl/version/1", std::to_string(linked_nccl_version()));
  double seconds = 0;
  const auto error = error_of_lone_rank(store, std::chrono::seconds(3), seconds);
  EXPECT_NE(error.find("NCCL communicator creation did not finish within 3 s: rank 1 never came to it"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("It was aborted"), std::string::npos) << error;
  EXPECT_GE(seconds, 3.0) << "it must have waited for the peer until the deadline";
  EXPECT_LT(seconds, 3 + 3.0) << "ncclCommAbort must end the creation promptly";
}

// Both ranks create the communicator, then rank 1 never comes to the gather: rank 0's
// gather ends at its deadline naming rank 1, later collectives are refused at once, and
// leaving (the collective's kernel aborted, its buffers freed or given up) does not wait.
TEST(NcclCollectives, AGatherThePeerNeverComesToEndsAtItsDeadlineAndLeavingDoesNotWait) {
  if (visible_devices() < 2)
    GTEST_SKIP() << "needs 2 GPUs (NCCL refuses two ranks on one); " << visible_devices() << " visible";
  MemoryStore store;
  const auto timeout = std::chrono::seconds(3);
  std::mutex mutex;
  std::condition_variable changed;
  bool rank0_done = false;
  std::string rank1_error;
  std::thread rank1([&] {
    try {
      const auto nccl = make_nccl_collectives(store, setup_of(1, 2, 1, timeout));
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return rank0_done; });
    } catch (const std::exception& error) {
      rank1_error = error.what();
    }
  });
  std::string error = "no error";
  std::string refused = "no error";
  double gather_seconds = 0;
  double leave_seconds = 0;
  try {
    auto nccl = make_nccl_collectives(store, setup_of(0, 2, 0, timeout));
    const auto start = std::chrono::steady_clock::now();
    try {
      nccl->all_gather("never gathered");
    } catch (const IoError& failure) {
      error = failure.what();
    }
    gather_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    try {
      nccl->barrier();
    } catch (const IoError& failure) {
      refused = failure.what();
    }
    const auto leaving = std::chrono::steady_clock::now();
    nccl.reset();
    leave_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - leaving).count();
  } catch (const std::exception& failure) {
    error = fmt::format("rank 0 failed outside the gather: {}", failure.what());
  }
  {
    const std::lock_guard lock(mutex);
    rank0_done = true;
  }
  changed.notify_all();
  rank1.join();
  EXPECT_EQ(rank1_error, "");
  EXPECT_NE(error.find("rank 0: NCCL all_gather of lengths (collective 1) did not finish within 3 s: rank 1 never "
                       "came to it"),
            std::string::npos)
      << error;
  EXPECT_GE(gather_seconds, 3.0);
  EXPECT_LT(gather_seconds, 3 + 3.0) << "the gather must end at its deadline";
  EXPECT_NE(refused.find("the NCCL communicator was aborted after an earlier failure"), std::string::npos) << refused;
  EXPECT_LT(leave_seconds, 3.0) << "leaving after an aborted collective must not wait for its kernel";
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
        const auto nccl = make_nccl_collectives(store, setup_of(rank, 2, rank));
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
