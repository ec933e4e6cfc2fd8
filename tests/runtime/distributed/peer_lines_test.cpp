// Every rank's line to rank 0: a rank whose process ends without a goodbye is named at
// once at rank 0's end, one that says goodbye is not, and rank 0's end closing is seen
// at the others'.
#include "distributed/peer_lines.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace mgpr::runtime {
namespace {

using std::chrono::milliseconds;

// What rank 0's end reports within a few seconds, polled as the peer watch does.
std::vector<int> closed_within(Rank0Lines& lines, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<int> closed;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto now_closed = lines.closed_without_goodbye(milliseconds(50));
    closed.insert(closed.end(), now_closed.begin(), now_closed.end());
  }
  return closed;
}

TEST(PeerLines, ALineClosedWithoutGoodbyeIsNamedAndAGoodbyeIsNot) {
  Rank0Lines lines;
  ASSERT_GT(lines.port(), 0);
  auto failing = std::make_unique<LineToRank0>("127.0.0.1", lines.port(), 1, milliseconds(2000));
  LineToRank0 leaving("localhost", lines.port(), 2, milliseconds(2000));
  ASSERT_TRUE(failing->connected());
  ASSERT_TRUE(leaving.connected());
  EXPECT_TRUE(closed_within(lines, milliseconds(300)).empty());  // both taken in, both alive
  leaving.goodbye();
  failing.reset();  // as the kernel closes a killed process's sockets
  EXPECT_EQ(closed_within(lines, milliseconds(500)), std::vector<int>{1});
}

TEST(PeerLines, RankZerosEndClosingIsSeenAtTheOthers) {
  auto lines = std::make_unique<Rank0Lines>();
  LineToRank0 line("127.0.0.1", lines->port(), 1, milliseconds(2000));
  ASSERT_TRUE(line.connected());
  (void)closed_within(*lines, milliseconds(200));
  EXPECT_FALSE(line.rank0_closed(milliseconds(100)));
  lines.reset();
  EXPECT_TRUE(line.rank0_closed(milliseconds(2000)));
}

TEST(PeerLines, NoListenerMeansNoLine) {
  int port = 0;
  {
    const Rank0Lines gone;
    port = gone.port();
  }
  const LineToRank0 line("127.0.0.1", port, 1, milliseconds(500));
  EXPECT_FALSE(line.connected());
}

}  // namespace
}  // namespace mgpr::runtime
