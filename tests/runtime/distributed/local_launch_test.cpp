// run_local_ranks with real processes (the helper re-executing itself): the torchrun
// environment, one GPU each, failures stopping the others, signals forwarded.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cerrno>
#include <set>
#include <sstream>

#include "distributed/local_launch.hpp"
#include "support/error_of.hpp"
#include "support/process.hpp"

namespace mgpr::test {
namespace {

std::string line_starting(const fs::path& file, const std::string& prefix) {
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(prefix)) return line;
  }
  return "";
}

std::vector<pid_t> rank_pids(const fs::path& dir, int ranks) {
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const auto line = line_starting(dir / fmt::format("rank-{}.txt", r), "pid ");
    if (!line.empty()) pids.push_back(std::stoi(line.substr(4)));
  }
  return pids;
}

bool exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// CUDA shows no GPU at all for "0,0", so the ranks could only say none is visible; the
// launcher names the list and the GPU instead, before any rank starts.
TEST(LocalLaunch, RefusesAGpuListedTwiceForTheRanksAskedFor) {
  const auto message = error_of([] { runtime::refuse_shared_gpus(2, "0,0"); });
  EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES='0,0' names GPU '0' twice"), std::string::npos) << message;
  EXPECT_NE(message.find("ranks 0 and 1"), std::string::npos) << message;
  EXPECT_NE(message.find("name each GPU once"), std::string::npos) << message;
  const auto by_uuid = error_of([] { runtime::refuse_shared_gpus(3, "GPU-a,GPU-b,GPU-a"); });
  EXPECT_NE(by_uuid.find("names GPU 'GPU-a' twice, so gpus=3 would put ranks 0 and 2"), std::string::npos) << by_uuid;
  // Distinct GPUs, and a repeat beyond the ranks asked for, are left alone.
  EXPECT_EQ(error_of([] { runtime::refuse_shared_gpus(2, "0,1"); }), "no error");
  EXPECT_EQ(error_of([] { runtime::refuse_shared_gpus(2, "0,1,0"); }), "no error");
  EXPECT_EQ(error_of([] { runtime::refuse_shared_gpus(1, "0,0"); }), "no error");
}

TEST(LocalLaunch, GivesEachRankTheTorchrunEnvironment) {
  const TempDir dir;
  const auto result = run({MGPR_COMM_RANK_EXE, "launch", "3", "cpu", "--", "out=" + dir.path().string()}, {},
                          dir.path(), std::chrono::seconds(60));
  ASSERT_EQ(result.code, 0) << result.err;
  std::set<std::string> ports;
  for (int r = 0; r < 3; ++r) {
    const auto env = line_starting(dir.path() / fmt::format("rank-{}.txt", r), "env ");
    EXPECT_NE(env.find(fmt::format("RANK={} WORLD_SIZE=3 LOCAL_RANK={} LOCAL_WORLD_SIZE=3 NODE_RANK=0 "
                                   "MASTER_ADDR=127.0.0.1 MASTER_PORT=",
                                   r, r)),
              std::string::npos)
        << env;
    EXPECT_NE(env.find("CUDA_VISIBLE_DEVICES=<unset>"), std::string::npos) << env;
    ports.insert(env.substr(env.find("MASTER_PORT="), env.find(" CUDA") - env.find("MASTER_PORT=")));
  }
  EXPECT_EQ(ports.size(), 1U) << "ranks must share one MASTER_PORT";
  EXPECT_EQ(ports.count("MASTER_PORT=0"), 0U);
}

TEST(LocalLaunch, OneGpuEachPicksFromTheVisibleDevices) {
  const TempDir dir;
  auto result = run({MGPR_COMM_RANK_EXE, "launch", "2", "gpu-each", "--", "out=" + dir.path().string()}, {}, dir.path(),
                    std::chrono::seconds(60));
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(line_starting(dir.path() / "rank-1.txt", "env ").find("CUDA_VISIBLE_DEVICES=1"), std::string::npos);

  result = run({MGPR_COMM_RANK_EXE, "launch", "2", "gpu-each", "--", "out=" + dir.path().string()},
               {{"CUDA_VISIBLE_DEVICES", "4,6,9"}}, dir.path(), std::chrono::seconds(60));
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(line_starting(dir.path() / "rank-0.txt", "env ").find("CUDA_VISIBLE_DEVICES=4"), std::string::npos);
  EXPECT_NE(line_starting(dir.path() / "rank-1.txt", "env ").find("CUDA_VISIBLE_DEVICES=6"), std::string::npos);

  result = run({MGPR_COMM_RANK_EXE, "launch", "3", "gpu-each", "--", "out=" + dir.path().string()},
               {{"CUDA_VISIBLE_DEVICES", "4,6"}}, dir.path(), std::chrono::seconds(60));
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find("CUDA_VISIBLE_DEVICES='4,6' lists 2"), std::string::npos) << result.err;
}

TEST(LocalLaunch, StopsTheOthersWhenOneRankFailsAndReturnsItsCode) {
  const TempDir dir;
  const auto result = run({MGPR_COMM_RANK_EXE, "launch", "3", "cpu", "--", "out=" + dir.path().string(), "fail_rank=1",
                           "fail=7", "sleep=120"},
                          {}, dir.path(), std::chrono::seconds(90));
  EXPECT_EQ(result.code, 7) << result.err;
  EXPECT_NE(result.err.find("rank 1 exited with status 7; stopping the other ranks"), std::string::npos) << result.err;
  EXPECT_LT(result.seconds, 60.0) << "the other ranks (sleeping 120 s) were not stopped";
  const auto pids = rank_pids(dir.path(), 3);
  ASSERT_EQ(pids.size(), 3U);
  for (const pid_t pid : pids) EXPECT_FALSE(exists(pid)) << "rank process " << pid << " outlived the launcher";
  EXPECT_TRUE(line_starting(dir.path() / "rank-0.txt", "done").empty());
}

TEST(LocalLaunch, ARankKilledBySignalGives128PlusTheSignal) {
  const TempDir dir;
  const auto result = run({MGPR_COMM_RANK_EXE, "launch", "2", "cpu", "--", "out=" + dir.path().string(), "fail_rank=0",
                           "fail=kill", "sleep=120"},
                          {}, dir.path(), std::chrono::seconds(90));
  EXPECT_EQ(result.code, 128 + SIGKILL) << result.err;
  EXPECT_NE(result.err.find("rank 0 was killed by signal 9"), std::string::npos) << result.err;
  EXPECT_LT(result.seconds, 60.0);
}

TEST(LocalLaunch, ForwardsSigtermToTheRanks) {
  const TempDir dir;
  Process launcher({MGPR_COMM_RANK_EXE, "launch", "2", "cpu", "--", "out=" + dir.path().string(), "sleep=120"}, {},
                   dir.path(), "launcher");
  // Wait until both ranks have joined (and so are sleeping).
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && (line_starting(dir.path() / "rank-0.txt", "joined").empty() ||
                                     line_starting(dir.path() / "rank-1.txt", "joined").empty())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto pids = rank_pids(dir.path(), 2);
  ASSERT_EQ(pids.size(), 2U);
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  const auto result = launcher.wait(std::chrono::seconds(60));
  EXPECT_EQ(result.code, 128 + SIGTERM) << result.err;
  EXPECT_LT(result.seconds, 60.0);
  for (const pid_t pid : pids) EXPECT_FALSE(exists(pid)) << "rank process " << pid << " outlived the launcher";
}

// The pids of the 2 ranks of a launcher, once both have joined.
std::vector<pid_t> joined_ranks(const fs::path& dir) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline &&
         (line_starting(dir / "rank-0.txt", "joined").empty() || line_starting(dir / "rank-1.txt", "joined").empty())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return rank_pids(dir, 2);
}

bool all_gone(const std::vector<pid_t>& pids, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    bool any = false;
    for (const pid_t pid : pids) any = any || exists(pid);
    if (!any) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The walltime stop (SIGUSR2) sent to a local launcher killed it alone; its
// ranks ran on orphaned.
TEST(LocalLaunch, ForwardsTheWalltimeStopToTheRanks) {
  const TempDir dir;
  Process launcher({MGPR_COMM_RANK_EXE, "launch", "2", "cpu", "--", "out=" + dir.path().string(), "sleep=120"}, {},
                   dir.path(), "launcher");
  const auto pids = joined_ranks(dir.path());
  ASSERT_EQ(pids.size(), 2U);
  ASSERT_EQ(::kill(launcher.pid(), SIGUSR2), 0);
  const auto result = launcher.wait(std::chrono::seconds(60));
  // The helper's ranks do not handle SIGUSR2 (mgpr's stop and exit 3): they end by it.
  EXPECT_EQ(result.code, 128 + SIGUSR2) << result.err;
  EXPECT_TRUE(all_gone(pids, std::chrono::seconds(5))) << "a rank outlived the launcher";
}

// Even a launcher killed outright (SIGKILL: nothing to pass on) takes its ranks along.
TEST(LocalLaunch, NoRankOutlivesAKilledLauncher) {
  const TempDir dir;
  Process launcher({MGPR_COMM_RANK_EXE, "launch", "2", "cpu", "--", "out=" + dir.path().string(), "sleep=120"}, {},
                   dir.path(), "launcher");
  const auto pids = joined_ranks(dir.path());
  ASSERT_EQ(pids.size(), 2U);
  ASSERT_EQ(::kill(launcher.pid(), SIGKILL), 0);
  EXPECT_EQ(launcher.wait(std::chrono::seconds(60)).code, 128 + SIGKILL);
  EXPECT_TRUE(all_gone(pids, std::chrono::seconds(10))) << "a rank outlived its killed launcher";
}

}  // namespace
}  // namespace mgpr::test
