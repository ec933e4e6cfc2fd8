#pragma once
// Why the plugin's watchdog ended a step early, in one word, and what the job script does
// about it: the plugin appends "<step> <word> <rank> <host>" to the job's endings file
// (JobLogLayout::step_endings()), and mgpr-submit's job script reads it after srun to
// decide whether requeueing can help. The words and the decisions are
// this one table's; the job script is rendered from it (launcher/sbatch_script.cpp).
#include <array>
#include <string_view>

namespace mgpr {

enum class RankEnding {
  kFailed,       // exited non-zero (not 2, not 3)
  kUsageError,   // exited 2: the run is refused as configured
  kCrashed,      // a crash signal: SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL ...
  kKilled,       // SIGKILL (or SIGTERM, SIGINT, SIGHUP) sent from outside Slurm's own ending of the job
  kOutOfMemory,  // killed while the step's memory cgroup recorded an out-of-memory kill
};

struct RankEndingRow {
  RankEnding ending;
  std::string_view word;  // in the endings file and the job script
  bool requeue;           // can the same job succeed when run again as it is?
  std::string_view why;   // the job script's words for its decision
};

// In the order the job script believes them when several ranks ended early (it acts on
// the first word of this order the endings file holds): a rank's death makes its peers
// fail right after it, so a kill outranks a crash, a usage error and a failure. A node
// can fail, a process can be killed by someone else: those are worth a requeue (bounded
// by the job script). A usage error, a crash or an out-of-memory kill at the same
// settings would fail again.
inline constexpr std::array<RankEndingRow, 5> kRankEndings{{
    {RankEnding::kOutOfMemory, "out-of-memory", false,
     "a rank was killed for memory and would be again at the same settings; lower batch_size or workers, or ask "
     "for more memory (--mem), then submit again"},
    {RankEnding::kKilled, "killed", true,
     "a rank was killed from outside the job (a node's health check, an administrator, the kernel); the tiles "
     "finished before it are journaled"},
    {RankEnding::kCrashed, "crashed", false, "a rank crashed; it would crash again as it is"},
    {RankEnding::kUsageError, "usage-error", false,
     "a rank refused the run as configured; correct the configuration and submit again"},
    {RankEnding::kFailed, "failed", false, "a rank failed; it would fail again as it is (see the rank's error above)"},
}};

// How often the job script requeues a job whose rank was killed from outside: a node
// that keeps killing it is not helped by more.
inline constexpr int kRequeuesAfterAKill = 2;

constexpr const RankEndingRow& rank_ending_row(RankEnding ending) {
  for (const auto& row : kRankEndings) {
    if (row.ending == ending) return row;
  }
  return kRankEndings.front();
}

}  // namespace mgpr
