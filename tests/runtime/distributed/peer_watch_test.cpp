// After rendezvous: a rank that stops (SIGSTOP, a frozen node) while its peers wait
// for it at a collective is named within peer_timeout, by rank and host, instead of the
// peers waiting out Gloo's timeout; a peer that is only slow is waited for. While the
// tiles run, a rank killed is named at once and one stopped within peer_timeout, and the
// survivors' loops end then, not at the next collective.
#include <gtest/gtest.h>
#include <signal.h>

#include <fmt/format.h>

#include <functional>
#include <thread>

#include "runtime/distributed/rank_env.hpp"
#include "support/process.hpp"
#include "support/text_search.hpp"

namespace mgpr::test {
namespace {

std::vector<std::string> rank_args(const fs::path& out, const std::vector<std::string>& more) {
  std::vector<std::string> argv = {MGPR_COMM_RANK_EXE, "out=" + out.string(), "timeout=30", "gather=1"};
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

using mgpr::test::contains;

TEST(PeerWatch, AStoppedPeerIsNamedWithinThePeerTimeout) {
  const TempDir dir;
  const int port = free_port();
  const std::vector<std::string> keys{"peer_timeout=2", "fail_rank=1", "fail=stop"};
  Process rank0(rank_args(dir.path(), keys), rank_env(0, 2, port), dir.path(), "rank0");
  Process rank1(rank_args(dir.path(), keys), rank_env(1, 2, port), dir.path(), "rank1");
  const auto waiting = rank0.wait(std::chrono::seconds(60));
  EXPECT_NE(waiting.code, 0) << waiting.err;
  EXPECT_TRUE(contains(waiting.err, "rank 1 on ")) << waiting.err;
  // Rank 0's watch or its wait at the collective, whichever sees it first.
  EXPECT_TRUE(contains(waiting.err, "showed no sign of life for 2 s")) << waiting.err;
  EXPECT_LT(waiting.seconds, 2 + 8.0) << "a stopped peer must not cost Gloo's collective timeout";
}

TEST(PeerWatch, AStoppedRankZeroIsNamedAsTheStore) {
  const TempDir dir;
  const int port = free_port();
  const std::vector<std::string> keys{"peer_timeout=2", "fail_rank=0", "fail=stop"};
  Process rank0(rank_args(dir.path(), keys), rank_env(0, 2, port), dir.path(), "rank0");
  Process rank1(rank_args(dir.path(), keys), rank_env(1, 2, port), dir.path(), "rank1");
  const auto waiting = rank1.wait(std::chrono::seconds(60));
  EXPECT_NE(waiting.code, 0) << waiting.err;
  EXPECT_TRUE(contains(waiting.err, "rank 0 on ")) << waiting.err;
  EXPECT_TRUE(contains(waiting.err, "which serves the run's store, did not answer rank 1")) << waiting.err;
  // LibTorch 2.x's client retries with a back-off beyond its timeout (rendezvous_test.cpp).
  EXPECT_LT(waiting.seconds, 2 + 15.0);
}

TEST(PeerWatch, ASlowButLivePeerIsWaitedFor) {
  const TempDir dir;
  const int port = free_port();
  const std::vector<std::string> keys{"peer_timeout=2", "slow_rank=1", "slow_s=5"};
  Process rank0(rank_args(dir.path(), keys), rank_env(0, 2, port), dir.path(), "rank0");
  Process rank1(rank_args(dir.path(), keys), rank_env(1, 2, port), dir.path(), "rank1");
  const auto first = rank0.wait(std::chrono::seconds(60));
  const auto second = rank1.wait(std::chrono::seconds(60));
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_GE(first.seconds, 5.0) << "rank 0 did wait for its slow peer";
  EXPECT_TRUE(contains(read_text(dir.path() / "rank-0.txt"), "gathered 1 ")) << read_text(dir.path() / "rank-0.txt");
}

// Each survivor's loop (600 tiles of 50 ms over 2 ranks: 15 s) checks its peers at every
// tile, as mgpr's does; `fail` hits rank `lost` half a second into the loop.
Finished survivor_of(const TempDir& dir, int lost, const std::string& fail, const std::string& peer_timeout = "2",
                     const std::function<void(pid_t survivor)>& meanwhile = {}) {
  const int port = free_port();
  const std::vector<std::string> keys{"peer_timeout=" + peer_timeout,
                                      "sharding=static",
                                      "tiles=600",
                                      "delay_ms=50",
                                      "fail_after_ms=500",
                                      "fail=" + fail,
                                      "stop_handlers=1",
                                      fmt::format("fail_rank={}", lost)};
  Process rank0(rank_args(dir.path(), keys), rank_env(0, 2, port), dir.path(), "rank0");
  Process rank1(rank_args(dir.path(), keys), rank_env(1, 2, port), dir.path(), "rank1");
  auto& survivor = lost == 0 ? rank1 : rank0;
  if (meanwhile) meanwhile(survivor.pid());
  return survivor.wait(std::chrono::seconds(60));
}

TEST(PeerWatch, APeerKilledMidRunEndsTheLoopAtOnceNamingIt) {
  const TempDir dir;
  const auto survivor = survivor_of(dir, 1, "kill");
  EXPECT_NE(survivor.code, 0) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "rank 1 on ")) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "ended in the middle of the run")) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "rank 0 ends too")) << survivor.err;
  EXPECT_LT(survivor.seconds, 8.0) << "the loss was not noticed while the tiles ran";
}

TEST(PeerWatch, RankZeroKilledMidRunIsNamedAtOnceInPlainWords) {
  const TempDir dir;
  const auto survivor = survivor_of(dir, 0, "kill");
  EXPECT_NE(survivor.code, 0) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "rank 0 on ")) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "stopped answering rank 1")) << survivor.err;
  EXPECT_FALSE(contains(survivor.err, "frame #")) << survivor.err;
  EXPECT_LT(survivor.seconds, 8.0) << "the loss was not noticed while the tiles ran";
}

TEST(PeerWatch, APeerStoppedMidRunIsNamedWithinThePeerTimeout) {
  const TempDir dir;
  const auto survivor = survivor_of(dir, 1, "stop");
  EXPECT_NE(survivor.code, 0) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "rank 1 on ")) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "showed no sign of life for 2 s in the middle of the run")) << survivor.err;
  EXPECT_LT(survivor.seconds, 2 + 8.0) << "the loss was not noticed while the tiles ran";
}

// A stop asked for (SIGTERM: the launcher's, or scancel's) has a grace shorter than
// peer_timeout: then a peer whose beat stopped for 5 s is lost, so the survivor ends
// within the grace instead of waiting 60 s for it.
TEST(PeerWatch, OnceAStopIsAskedForAPeerSilentForFiveSecondsIsLost) {
  const TempDir dir;
  const auto survivor = survivor_of(dir, 1, "stop", "60", [](pid_t rank0) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::kill(rank0, SIGTERM);
  });
  EXPECT_NE(survivor.code, 0) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "rank 1 on ")) << survivor.err;
  EXPECT_TRUE(contains(survivor.err, "showed no sign of life for 5 s")) << survivor.err;
  EXPECT_LT(survivor.seconds, 10.0) << "the stopped rank waited out peer_timeout";
}

}  // namespace
}  // namespace mgpr::test
