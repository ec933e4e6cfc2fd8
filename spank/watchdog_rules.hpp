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

#include "mgpr/rank_endings.hpp"
#include "mgpr/run_choices.hpp"

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
  double elapsed_s = 0;           // since the node's tasks were started
  int rendezvous_timeout_s = 0;   // 0: no rendezvous check
  int stall_timeout_s = 0;        // 0: no stall check
  bool armed_from_start = false;  // --mgpr-timeout given: the program reports
  OnRankLoss on_rank_loss = OnRankLoss::kFail;
  std::vector<RankProgress> local;     // this node's ranks
  std::vector<int> arrived_elsewhere;  // other nodes' ranks whose files this node sees
};

struct WatchVerdict {
  bool end_step = false;
  std::string message;  // one line, when end_step or when ranks are left to the run
  // Under on_rank_loss=continue: stalled ranks other than rank 0, which the step is not
  // ended for (the runtime's peer watch fences them and the run goes on); the message
  // names them.
  std::vector<int> left_to_the_run;
};

// Rendezvous: once armed (from the start, or when any rank of the step has reported),
// every rank of this node must report within the timeout. Stall: once all of this
// node's ranks have reported, none may go stall_timeout_s without touching its file;
// under on_rank_loss=continue only rank 0's stall ends the step.
// Exited ranks are neither missing nor stalled; finished ones are not stalled.
WatchVerdict judge(const WatchFacts& facts);

// One rank's task ended: what the watchdog knows of it when it judges.
struct ExitFacts {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::string host;
  int rank = 0;
  int wait_status = 0;
  // slurmctld says the job or this step is no longer running (scancel, the walltime, a
  // node failure, a preemption): Slurm itself is ending it, and says so.
  bool slurm_ends_step = false;
  // Every rank of this node was killed with SIGKILL within a moment: a kill of the whole
  // step (scancel of the step, which leaves the job running), not one rank's death.
  bool step_killed_whole = false;
  // This node already saw the step told to stop: its watchdog ended it, or a rank of it
  // ended on SIGTERM, SIGINT, SIGHUP or SIGUSR2 (a step-wide signal: the SIGKILL that follows
  // for a rank that ignored it is part of the same stop).
  bool step_told_to_stop = false;
  // The step's memory cgroup recorded an out-of-memory kill since its tasks started;
  // nullopt when this node cannot tell (no memory cgroup for the step).
  std::optional<bool> out_of_memory;
  OnRankLoss on_rank_loss = OnRankLoss::kFail;
};

struct ExitVerdict {
  bool end_step = false;
  // Under on_rank_loss=continue: a rank other than rank 0 died and the run goes on
  // without it; the step is not ended, and `message` says so.
  bool lost = false;
  RankEnding ending = RankEnding::kFailed;  // when end_step or lost
  std::string message;                      // one line, when end_step or lost
};

// Signals Slurm or the user send to every task of the step: a stop, not one rank's death.
// SIGUSR2 is the warning before walltime (the job template's --signal=USR2@N): slurmctld
// may send it in a job's first seconds, before a rank has its handler, which it then
// ends; its peers got it too and stop cleanly, and the job script requeues (128 + USR2).
// Taken for a crash, it ended the step and the job was not requeued.
bool is_stop_signal(int signal);

// A rank that ends early leaves its peers waiting in a collective, so it ends the step:
// a non-zero exit other than kExitStopped (the clean stop before walltime), a crash
// signal, or a kill (SIGKILL: the OOM killer, a cgroup limit, a health check, kill -9),
// unless Slurm is ending the job or the step itself. SIGTERM, SIGINT, SIGHUP and SIGUSR2
// are a step told to stop (scancel --signal, Ctrl-C on srun, this watchdog on another
// node, the warning before walltime):
// not an early death, and the kills after them belong to the same stop.
// Under on_rank_loss=continue such a death of a rank other than rank 0 is a loss the run
// survives (`lost`), except a usage error, which every rank would meet: it still ends
// the step, and so does any death of rank 0, which holds the run's store and writer.
ExitVerdict judge_exit(const ExitFacts& facts);

}  // namespace mgpr::spank
