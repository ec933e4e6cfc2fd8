#pragma once
// A TCP connection from every rank to rank 0, held for the whole run beside the store.
// The kernel closes a process's sockets however it ends (SIGKILL, the out-of-memory
// killer, a crash), so the other end of a rank's line learns of its end at once, where a
// beat that stopped takes peer_timeout to tell. A rank that leaves in order says goodbye
// first. A line that cannot be made (a firewall between nodes) leaves the beats alone to
// tell: the lines only make a loss known sooner, never later.
#include <chrono>
#include <string>
#include <vector>

namespace mgpr::runtime {

// Rank 0's end: the lines of every other rank.
class Rank0Lines {
 public:
  // Listens on a port of every interface the system picks; port() is 0 when it cannot.
  Rank0Lines();
  ~Rank0Lines();
  Rank0Lines(const Rank0Lines&) = delete;
  Rank0Lines& operator=(const Rank0Lines&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // Waits up to `wait` for news on the lines, takes in new ones, and returns the ranks
  // whose line closed without a goodbye since the last call.
  std::vector<int> closed_without_goodbye(std::chrono::milliseconds wait);

 private:
  struct Line {
    int fd = -1;
    int rank = -1;        // -1 until the rank said which it is
    std::string pending;  // what came after the last full message
    bool left = false;    // said goodbye: its end is no loss
  };
  void accept_lines();
  // False when the line is done with: said goodbye, closed, or never said its rank.
  bool read_line(Line& line, std::vector<int>& closed);

  int listener_ = -1;
  int port_ = 0;
  std::vector<Line> lines_;
};

// The end of a rank other than 0.
class LineToRank0 {
 public:
  // Connects to rank 0 at `host`:`port` (giving up after `connect_timeout`) and says
  // which rank this is; connected() tells whether that worked.
  LineToRank0(const std::string& host, int port, int rank, std::chrono::milliseconds connect_timeout);
  // Closes without a goodbye: a rank that did not say it leaves in order has failed.
  ~LineToRank0();
  LineToRank0(const LineToRank0&) = delete;
  LineToRank0& operator=(const LineToRank0&) = delete;

  [[nodiscard]] bool connected() const { return fd_ >= 0; }
  // Waits up to `wait`; true once rank 0's end closed (its process ended).
  bool rank0_closed(std::chrono::milliseconds wait);
  // Says this rank leaves in order, and closes the line.
  void goodbye();

 private:
  int fd_ = -1;
};

}  // namespace mgpr::runtime
