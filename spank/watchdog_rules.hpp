#pragma once
// When the watchdog ends a step, and what it tells the user. Pure: the watchdog thread
// (watchdog.cpp) gathers the facts, these functions decide.
//
// Ranks report through files (docs/spank.md, "Progress reports"): a rank creates its
// MGPR_PROGRESS_FILE when it reaches rendezvous and touches it whenever it progresses,
// and writes "finished" into it once it only waits for its peers.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

// The progress files' names and folder are common/'s (mgpr/log_layout.hpp).
namespace mgpr::spank {

struct RankProgress {
  int rank = 0;
  bool arrived = false;             // its progress file exists
  bool exited = false;              // its task has ended (any way)
  double seconds_since_report = 0;  // age of its file's last touch, when arrived
  bool finished = false;            // it did its share and waits for its peers: never stalled
};

struct WatchFacts {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string host;
  int world_size = 0;
  double elapsed_s = 0;                // since the node's tasks were started
  int rendezvous_timeout_s = 0;        // 0: no rendezvous check
  int stall_timeout_s = 0;             // 0: no stall check
  bool armed_from_start = false;       // --mgpr-timeout given: the program reports
  std::vector<RankProgress> local;     // this node's ranks
  std::vector<int> arrived_elsewhere;  // other nodes' ranks whose files this node sees
};

struct WatchVerdict {
  bool end_step = false;
  std::string message;  // one line, when end_step
};

// Rendezvous: once armed (from the start, or when any rank of the step has reported),
// every rank of this node must report within the timeout. Stall: once all of this
// node's ranks have reported, none may go stall_timeout_s without touching its file.
// Exited ranks are neither missing nor stalled; finished ones are not stalled.
WatchVerdict judge(const WatchFacts& facts);

// A rank that ends this way leaves its peers waiting in a collective: a non-zero exit
// code other than kExitStopped (a clean stop, never a failure), or a crash signal. SIGTERM, SIGKILL, SIGINT and SIGHUP
// are cancellations (scancel, Ctrl-C, the watchdog itself) and do not count.
bool exit_ends_step(int wait_status);
std::string early_exit_message(std::uint32_t job_id, std::uint32_t step_id, const std::string& host, int rank,
                               int wait_status);

}  // namespace mgpr::spank
