// Requeue across two hosts, for real: the job template's USR2 before walltime (Slurm's
// own --signal timer, a one-minute --time) stops and requeues the job until it is done;
// a preemption-style `scontrol requeue` mid-run comes back without redoing finished
// tiles. Either way the output is the complete one an uninterrupted run writes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "job_state.hpp"
#include "slurm/multi_node/multi_node_support.hpp"
#include "support/known_squares.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::count;
using mgpr::test::read_file;
using namespace mgpr::test::multi_node;

// A requeued job waits about two minutes (BeginTime) before it may start: start it now.
// A launch in the same second as the last run's end is refused ("Job credential
// revoked"), hence the pause.
void start_requeued_now(const std::string& job_id) {
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const auto update = run_command({"scontrol", "update", "jobid=" + job_id, "StartTime=now"});
  EXPECT_EQ(update.exit_code, 0) << update.err;
}

// The job waits, requeued once, for its start (Slurm's BeginTime).
bool requeued_once(const std::string& job_id) {
  return mgpr::test::eventually(60, [&] {
    const auto state = mgpr::launcher::query_job_state(job_id);
    return state && state->state == "PENDING" && state->restarts == 1;
  });
}

// Starts the requeued job now and waits for its end: its state, nullopt if it did not end.
std::optional<mgpr::launcher::JobState> run_requeued_to_its_end(const std::string& job_id) {
  start_requeued_now(job_id);
  std::optional<mgpr::launcher::JobState> state;
  const bool ended = mgpr::test::eventually(120, [&] {
    state = mgpr::launcher::query_job_state(job_id);
    return state && state->finished();
  });
  return ended ? state : std::nullopt;
}

Rows uninterrupted(const fs::path& dir, int tiles) {
  const auto out = dir / "uninterrupted";
  const auto run = submit_two_by_two({"--wait", "--log-dir", (dir / "logs").string()}, fake_run(tiles, 0, out));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  return mgpr::test::read_csv_rows(out / "fake_tiles.csv");
}

using JobGuard = std::unique_ptr<const std::string, void (*)(const std::string*)>;
JobGuard cancel_at_end(const std::string& job_id) {
  return {&job_id, [](const std::string* id) { run_command({"scancel", *id}); }};
}

TEST(MultiNode, TheWalltimeStopRequeuesUntilTheJobIsDoneWithTheCompleteOutput) {
  constexpr int kTiles = 960;  // about 60 s at 16 tiles/s: longer than the minute's lead time
  const auto dir = scratch("walltime");
  const auto logs = dir / "logs";
  const auto out = dir / "out";
  // USR2 50 s before the end of a one-minute job: slurmctld sends it at its first
  // time-limit check (every 30 s) after the start, so 0 to 30 s in, sometimes before the
  // ranks have their handlers; the template requeues either way.
  const auto submitted = submit_two_by_two(
      {"--time", "00:01:00", "--sbatch-arg=--signal=USR2@50", "--log-dir", logs.string()}, fake_run(kTiles, 0.5, out));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const auto job_id = job_id_of(submitted);
  const auto cancel = cancel_at_end(job_id);
  const mgpr::JobLogLayout layout{logs, job_id};

  std::optional<mgpr::launcher::JobState> state;
  int restarts_started = 0;
  const bool done = mgpr::test::eventually(300, [&] {
    state = mgpr::launcher::query_job_state(job_id);
    if (!state) return false;
    if (state->state == "PENDING" && state->restarts > restarts_started) {
      restarts_started = state->restarts;
      start_requeued_now(job_id);
    }
    return state->finished();
  });
  ASSERT_TRUE(done) << "stdout:\n" << read_file(layout.stdout_log()) << "\nstderr:\n" << read_file(layout.stderr_log());
  EXPECT_EQ(state->state, "COMPLETED") << read_file(layout.stderr_log());
  EXPECT_GE(state->restarts, 1) << "the walltime signal never stopped the job";
  const auto stderr_text = read_file(layout.stderr_log());
  EXPECT_EQ(count(stderr_text, "stopped before walltime; requeueing job"), static_cast<std::size_t>(state->restarts))
      << stderr_text;
  EXPECT_TRUE(contains(read_file(layout.stdout_log()), "# resuming: ")) << read_file(layout.stdout_log());

  const auto report = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_TRUE(contains(report.out, "restarted " + std::to_string(state->restarts) + " time(s)")) << report.out;
  EXPECT_TRUE(contains(report.out, "nodes x ranks: 2x2")) << report.out;

  expect_same_tiles(mgpr::test::read_csv_rows(out / "fake_tiles.csv"), uninterrupted(dir, kTiles));
}

TEST(MultiNode, AScontrolRequeueMidRunResumesWithoutRedoingFinishedTiles) {
  constexpr int kTiles = 320;  // about 20 s at 16 tiles/s
  const auto dir = scratch("preempted");
  const auto logs = dir / "logs";
  const auto out = dir / "out";
  const auto submitted = submit_two_by_two({"--log-dir", logs.string()}, fake_run(kTiles, 0.5, out));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const auto job_id = job_id_of(submitted);
  const auto cancel = cancel_at_end(job_id);
  const mgpr::JobLogLayout layout{logs, job_id};

  // Preempted once every rank has done some batches (a progress line each).
  ASSERT_TRUE(mgpr::test::eventually(60,
                                     [&] {
                                       const auto text = read_file(layout.stdout_log());
                                       return count(text, ": batch 10, ") >= 4;
                                     }))
      << read_file(layout.stdout_log()) << read_file(layout.stderr_log());
  const auto requeue = run_command({"scontrol", "requeue", job_id});
  ASSERT_EQ(requeue.exit_code, 0) << requeue.err;
  ASSERT_TRUE(requeued_once(job_id));
  const auto state = run_requeued_to_its_end(job_id);
  ASSERT_TRUE(state) << read_file(layout.stderr_log());
  EXPECT_EQ(state->state, "COMPLETED") << read_file(layout.stderr_log());

  // The second run did only what the first had not finished.
  const std::regex resumed(R"(# resuming: (\d+) of (\d+) tiles were finished by an earlier run)");
  std::smatch match;
  const auto stdout_text = read_file(layout.stdout_log());
  ASSERT_TRUE(std::regex_search(stdout_text, match, resumed)) << stdout_text;
  const int finished_before = std::stoi(match[1]);
  EXPECT_EQ(std::stoi(match[2]), kTiles);
  EXPECT_GE(finished_before, 4 * 10) << "every rank had journaled batches before the requeue";
  std::int64_t done_after = 0;
  for (const auto& rank : rank_summaries(logs, job_id, 4)) done_after += rank.tiles;
  EXPECT_EQ(done_after, kTiles - finished_before) << "finished tiles were done again";

  expect_same_tiles(mgpr::test::read_csv_rows(out / "fake_tiles.csv"), uninterrupted(dir, kTiles));
}

// A rank SIGKILLed mid-run (what the OOM killer, a cgroup limit and a node's health check
// send): the plugin ends the step within seconds, naming rank, host and signal, and the
// job script requeues the job (a kill from outside may not come again); the requeued run
// does only what was left, every tile once.
TEST(MultiNode, ARankKilledMidRunEndsTheStepInSecondsAndTheRequeuedJobFinishesTheRun) {
  constexpr int kTiles = 640;  // about 40 s at 16 tiles/s
  const auto dir = scratch("killed-rank");
  const auto logs = dir / "logs";
  const auto out = dir / "out";
  fs::create_directories(logs);
  // The job runs this in place of mgpr: rank 1 (on node1) is killed 6 s in, first run only.
  const auto mgpr_path = (fs::path(MGPR_SUBMIT).parent_path() / "mgpr").string();
  const auto wrapper = dir / "mgpr-killed-once";
  std::ofstream(wrapper) << "#!/bin/bash\n"
                         << "if [ \"${SLURM_RESTART_COUNT:-0}\" = 0 ] && [ \"$RANK\" = 1 ]; then\n"
                         << "  (sleep 6; kill -9 $$) &\n"
                         << "fi\n"
                         << "exec " << mgpr_path << " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  const auto rendered = submit_two_by_two({"--dry-run", "--log-dir", logs.string()}, fake_run(kTiles, 0.5, out));
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  std::string script = rendered.out;
  const auto at = script.find(mgpr_path + " --config");
  ASSERT_NE(at, std::string::npos) << script;
  script.replace(at, mgpr_path.size(), wrapper.string());
  std::ofstream(dir / "job.sbatch") << script;

  const auto started = std::chrono::steady_clock::now();
  const auto submitted = run_command({"sbatch", "--parsable", (dir / "job.sbatch").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const auto job_id = job_id_of(submitted);
  const auto cancel = cancel_at_end(job_id);
  const mgpr::JobLogLayout layout{logs, job_id};
  ASSERT_TRUE(requeued_once(job_id)) << read_file(layout.stderr_log());
  // Start-up, the 6 s before the kill, and the plugin's few seconds; the run alone takes 40.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 30.0)
      << read_file(layout.stderr_log());
  // Rank 0's memory stayed flat: the lost rank's tiles held up its writer, and had the
  // survivors gone on, the rest of the run (over 500 tiles) would have piled up there
  // unwritten. The first run's summary, read before the requeued run writes its own.
  const auto rank0 = mgpr::rank_summary_from_json(read_file(layout.rank_summary(0)), "rank 0");
  EXPECT_EQ(rank0.status, mgpr::RankStatus::kFailed) << rank0.error;
  EXPECT_GT(rank0.writer_held_peak_tiles, 0);
  EXPECT_LT(rank0.writer_held_peak_tiles, kTiles / 4) << rank0.error;
  const auto state = run_requeued_to_its_end(job_id);
  ASSERT_TRUE(state) << read_file(layout.stderr_log());
  EXPECT_EQ(state->state, "COMPLETED") << read_file(layout.stderr_log());

  const auto stderr_text = read_file(layout.stderr_log());
  EXPECT_TRUE(contains(stderr_text, "rank 1 of step " + job_id + ".0 on node1 was killed by signal 9 (SIGKILL"))
      << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "mgpr: requeueing job " + job_id + ": a rank was killed from outside the job"))
      << stderr_text;
  EXPECT_TRUE(contains(read_file(layout.diagnoses()), "was killed by signal 9")) << read_file(layout.diagnoses());
  const auto report = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_TRUE(contains(report.out, "on node1 was killed by signal 9")) << report.out;

  const auto rows = mgpr::test::read_csv_rows(out / "fake_tiles.csv");
  std::set<std::string> tiles;
  for (const auto& row : rows) EXPECT_TRUE(tiles.insert(tile_of(row)).second) << "tile " << tile_of(row) << " twice";
  EXPECT_EQ(tiles.size(), static_cast<std::size_t>(kTiles));
}

}  // namespace
