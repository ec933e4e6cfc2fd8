// Rendezvous with real processes: gathers of unequal sizes, late ranks that still make
// it, and missing ranks named within the timeout on every rank that can be reached.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "runtime/distributed/rank_env.hpp"
#include "support/comm_payload.hpp"
#include "support/eventually.hpp"
#include "support/process.hpp"

namespace mgpr::test {
namespace {

std::vector<std::string> rank_args(const fs::path& out, int timeout_s, const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {MGPR_COMM_RANK_EXE, "out=" + out.string(), fmt::format("timeout={}", timeout_s)};
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

// The "gathered R SIZE HASH" lines every rank must have written.
std::string expected_gather(int world) {
  std::string out;
  for (int r = 0; r < world; ++r) {
    out += fmt::format("gathered {} {} {}\n", r, gather_payload(r).size(), fnv1a(gather_payload(r)));
  }
  return out;
}

std::string gather_lines(const fs::path& file) {
  std::string out;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("gathered ")) out += line + "\n";
  }
  return out;
}

class AllGather : public ::testing::TestWithParam<int> {};

TEST_P(AllGather, ReturnsEveryRanksBytesOfUnequalSizes) {
  const int world = GetParam();
  const TempDir dir;
  const auto result = run({MGPR_COMM_RANK_EXE, "launch", std::to_string(world), "cpu", "--",
                           "out=" + dir.path().string(), "gather=1", "timeout=30"},
                          {}, dir.path(), std::chrono::seconds(90));
  ASSERT_EQ(result.code, 0) << result.err;
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(gather_lines(dir.path() / fmt::format("rank-{}.txt", r)), expected_gather(world)) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(World, AllGather, ::testing::Values(1, 2, 3));

TEST(Rendezvous, RankArrivingLateWithinTheTimeoutJoins) {
  const TempDir dir;
  const int port = free_port();
  Process rank0(rank_args(dir.path(), 20, {"gather=1"}), rank_env(0, 2, port), dir.path(), "rank0");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Process rank1(rank_args(dir.path(), 20, {"gather=1"}), rank_env(1, 2, port), dir.path(), "rank1");
  const auto first = rank0.wait(std::chrono::seconds(60));
  const auto second = rank1.wait(std::chrono::seconds(60));
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(gather_lines(dir.path() / "rank-1.txt"), expected_gather(2));
}

bool accepts_connections(int port) {
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool connected = ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(client);
  return connected;
}

// A store client that finds no server backs off for up to a second: rank 0 listens
// while it still prepares, so a rank that is ready first finds the store there.
TEST(Rendezvous, RankZeroServesTheStoreWhileItStillPrepares) {
  const TempDir dir;
  const int port = free_port();
  Process rank0(rank_args(dir.path(), 20, {"gather=1", "prepare_s=4"}), rank_env(0, 2, port), dir.path(), "rank0");
  EXPECT_TRUE(eventually(3, [&] { return accepts_connections(port); }))
      << "rank 0 was not serving its store within 3 s of its start, during its 4 s of preparation";
  Process rank1(rank_args(dir.path(), 20, {"gather=1"}), rank_env(1, 2, port), dir.path(), "rank1");
  const auto first = rank0.wait(std::chrono::seconds(60));
  const auto second = rank1.wait(std::chrono::seconds(60));
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(gather_lines(dir.path() / "rank-0.txt"), expected_gather(2));
  EXPECT_EQ(gather_lines(dir.path() / "rank-1.txt"), expected_gather(2));
}

// The inputs are expanded once per run: rank 0 lists the folder and every other rank takes
// its list, so a tile added while the ranks start cannot give them different lists.
TEST(Rendezvous, EveryRankReadsTheInputsRankZeroExpanded) {
  const TempDir dir;
  const auto tiles = dir.path() / "tiles";
  fs::create_directories(tiles);
  for (const auto* name : {"a.tif", "b.tif"}) std::ofstream(tiles / name) << "x";
  const int port = free_port();
  const std::vector<std::string> keys{"inputs=" + tiles.string()};
  Process rank0(rank_args(dir.path(), 20, keys), rank_env(0, 2, port), dir.path(), "rank0");
  ASSERT_TRUE(eventually(20, [&] {
    return read_text(dir.path() / "rank-0.txt").find("inputs shared") != std::string::npos;
  })) << "rank 0 did not expand its inputs";
  std::ofstream(tiles / "c.tif") << "x";  // after rank 0's listing, before rank 1's start
  Process rank1(rank_args(dir.path(), 20, keys), rank_env(1, 2, port), dir.path(), "rank1");
  const auto first = rank0.wait(std::chrono::seconds(60));
  const auto second = rank1.wait(std::chrono::seconds(60));
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(second.code, 0) << second.err;
  const auto inputs_of = [&](int rank) {
    std::string lines;
    std::istringstream in(read_text(dir.path() / fmt::format("rank-{}.txt", rank)));
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("input ")) lines += line + "\n";
    }
    return lines;
  };
  const auto expected = fmt::format("input {}\ninput {}\n", (tiles / "a.tif").string(), (tiles / "b.tif").string());
  EXPECT_EQ(inputs_of(0), expected);
  EXPECT_EQ(inputs_of(1), expected);
}

TEST(Rendezvous, MissingRankIsNamedWithinTheTimeout) {
  const TempDir dir;
  const int port = free_port();
  const auto progress = dir.path() / "rank-00000";
  auto env = rank_env(0, 2, port);
  env["MGPR_PROGRESS_FILE"] = progress.string();
  const auto result = run(rank_args(dir.path(), 3), env, dir.path(), std::chrono::seconds(30));
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find("rank 1 of 2 never reached rank 0's store at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("within 3 s"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("arrived: rank 0 on "), std::string::npos) << result.err;
  EXPECT_GE(result.seconds, 2.9);
  EXPECT_LT(result.seconds, 3 + 5.0) << "the failure took far longer than the 3 s timeout";
  // Rank 0 did reach the rendezvous: the watchdog must not count it as missing.
  EXPECT_TRUE(fs::exists(progress));
}

TEST(Rendezvous, EveryReachableRankGetsTheDiagnosis) {
  const TempDir dir;
  const int port = free_port();
  Process rank0(rank_args(dir.path(), 3), rank_env(0, 3, port), dir.path(), "rank0");
  Process rank1(rank_args(dir.path(), 3), rank_env(1, 3, port), dir.path(), "rank1");
  const auto first = rank0.wait(std::chrono::seconds(30));
  const auto second = rank1.wait(std::chrono::seconds(30));
  for (const auto* result : {&first, &second}) {
    EXPECT_NE(result->code, 0);
    EXPECT_NE(result->err.find("rank 2 of 3 never reached"), std::string::npos) << result->err;
    EXPECT_NE(result->err.find("ranks 0-1 on "), std::string::npos) << result->err;
    EXPECT_LT(result->seconds, 3 + 5.0);
  }
}

TEST(Rendezvous, MissingRankZeroIsReportedByTheOthers) {
  const TempDir dir;
  const int port = free_port();  // nobody serves it
  const auto result = run(rank_args(dir.path(), 3), rank_env(1, 2, port), dir.path(), std::chrono::seconds(30));
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find(fmt::format("rank 1 could not reach rank 0 / the store at 127.0.0.1:{} within 3 s", port)),
            std::string::npos)
      << result.err;
  // LibTorch 2.x's store client retries its connection with a growing back-off and was
  // seen giving up up to 5.8 s after its 3 s timeout here (1.13: within 1 s of it).
  EXPECT_LT(result.seconds, 3 + 8.0);
}

TEST(Rendezvous, PortHeldByAnotherProgramIsReportedByRankZero) {
  const TempDir dir;
  const int port = free_port();
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  const auto result = run(rank_args(dir.path(), 3), rank_env(0, 2, port), dir.path(), std::chrono::seconds(30));
  ::close(holder);
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find(fmt::format("rank 0 could not serve the store at 127.0.0.1:{}", port)), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("choose another with srun --mgpr-port or MASTER_PORT"), std::string::npos) << result.err;
}

TEST(Rendezvous, WithoutMasterAddressSaysWhatToSet) {
  const TempDir dir;
  const auto result =
      run(rank_args(dir.path(), 3), {{"RANK", "0"}, {"WORLD_SIZE", "2"}}, dir.path(), std::chrono::seconds(30));
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find("MASTER_ADDR and MASTER_PORT must name rank 0's host"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace mgpr::test
