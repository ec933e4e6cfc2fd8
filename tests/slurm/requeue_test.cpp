// A requeued job (the template asks for --requeue) runs again under the same id, with
// its log folder already there: the second run must work, keep the first run's output,
// and mgpr-logs must say the job restarted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "job_state.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::count;
using mgpr::test::read_file;
using mgpr::test::scratch;
namespace fs = std::filesystem;

TEST(Requeue, ASecondRunReusesTheLogFolderAndIsReported) {
  const auto logs = scratch("requeue");
  const auto first =
      run_command({MGPR_SUBMIT, "--gpus", "a100:1", "--wait", "--log-dir", logs.string(), "use_fake_data=true",
                   "dummy_dataset_count=4", "tile_size=64", "output_dir=" + (logs / "out").string()});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::string job_id = mgpr::test::job_id_of(first);
  const mgpr::JobLogLayout layout{logs, job_id};
  const auto first_summary_time = fs::last_write_time(layout.rank_summary(0));

  // slurmd revokes a finished job's credential with a time in whole seconds, and refuses
  // a launch whose credential is from that same second ("Job credential revoked", seen
  // once in CI when the requeued run started within a second): let a second pass.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // A finished batch job can be requeued while slurmctld remembers it (MinJobAge).
  const auto requeue = run_command({"scontrol", "requeue", job_id});
  ASSERT_EQ(requeue.exit_code, 0) << requeue.err;
  // Slurm holds a requeued job back about two minutes (BeginTime); start it now.
  const auto start_now = run_command({"scontrol", "update", "jobid=" + job_id, "StartTime=now"});
  ASSERT_EQ(start_now.exit_code, 0) << start_now.err;

  std::optional<mgpr::launcher::JobState> state;
  for (int second = 0; second < 90; ++second) {
    state = mgpr::launcher::query_job_state(job_id);
    if (state && state->restarts == 1 && state->finished()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_TRUE(state);
  EXPECT_EQ(state->state, "COMPLETED");
  EXPECT_EQ(state->restarts, 1);

  // Both runs' banners are in the one stdout log (the template appends), and the
  // summary is the second run's.
  EXPECT_EQ(count(mgpr::read_text_file(layout.stdout_log()), "| rank   0/1 |"), 2U)
      << mgpr::read_text_file(layout.stdout_log());
  EXPECT_GT(fs::last_write_time(layout.rank_summary(0)), first_summary_time);
  EXPECT_TRUE(fs::exists(layout.batch_script()));
  EXPECT_TRUE(fs::exists(layout.resolved_config()));

  const auto report = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(contains(report.out, "finished; restarted 1 time(s)")) << report.out;
  EXPECT_TRUE(contains(report.out, "total: 1 rank(s)")) << report.out;
}

// The walltime stop (USR2 to the steps, as --signal=USR2@120 sends
// it) must end the step with 3 and requeue every time, not about half the time: a clean
// stop on one rank once killed its still-finishing peer (srun exited 143, no requeue).
// Stopped kStops times in a row, every stop requeues, and the job then finishes every
// tile exactly once.
TEST(Requeue, AWalltimeStopRequeuesEveryTimeAndTheJobFinishesEveryTileOnce) {
  constexpr int kStops = 5;
  constexpr int kTiles = 600;
  const auto logs = scratch("requeue-usr2");
  const auto out = logs / "out";
  const auto submitted = run_command({MGPR_SUBMIT, "--gpus", "a100:2", "--log-dir", logs.string(), "use_fake_data=true",
                                      "dummy_dataset_count=" + std::to_string(kTiles), "dummy_dataset_delay=0.05",
                                      "tile_size=64", "batch_size=4", "output_dir=" + out.string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = mgpr::test::job_id_of(submitted);
  const mgpr::JobLogLayout layout{logs, job_id};
  // However the test ends, the job does not stay behind to hold the cluster's GPUs.
  const std::unique_ptr<const std::string, void (*)(const std::string*)> cancel(&job_id, [](const std::string* id) {
    run_command({"scancel", *id});
  });
  const auto wait_for = [&](const std::string& what, const std::function<bool()>& done) {
    for (int tenth = 0; tenth < 1200; ++tenth) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out waiting for " << what << "\nstdout:\n"
                  << read_file(layout.stdout_log()) << "\nstderr:\n"
                  << read_file(layout.stderr_log());
    return false;
  };

  for (int stop = 0; stop < kStops; ++stop) {
    // Both ranks print their banner after installing the stop handlers.
    const auto run = static_cast<std::size_t>(stop) + 1;
    ASSERT_TRUE(wait_for("run " + std::to_string(run) + "'s ranks", [&] {
      const auto text = read_file(layout.stdout_log());
      return count(text, "| rank   0/2 |") >= run && count(text, "| rank   1/2 |") >= run;
    }));
    std::this_thread::sleep_for(std::chrono::seconds(1));  // some tiles journaled
    ASSERT_EQ(run_command({"scancel", "--signal=USR2", job_id}).exit_code, 0);
    ASSERT_TRUE(wait_for("requeue " + std::to_string(run), [&] {
      const auto state = mgpr::launcher::query_job_state(job_id);
      return count(read_file(layout.stderr_log()), "requeueing job") >= run && state &&
             state->restarts == static_cast<int>(run) && state->state == "PENDING";
    }));
    // A launch in the same second as the last run's end is refused (see above); then
    // start the requeued job now rather than after Slurm's two-minute hold.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    ASSERT_EQ(run_command({"scontrol", "update", "jobid=" + job_id, "StartTime=now"}).exit_code, 0);
  }
  std::optional<mgpr::launcher::JobState> state;
  ASSERT_TRUE(wait_for("the job to finish", [&] {
    state = mgpr::launcher::query_job_state(job_id);
    return state && state->finished();
  }));
  EXPECT_EQ(state->state, "COMPLETED") << read_file(layout.stderr_log());
  EXPECT_EQ(state->restarts, kStops);
  const auto stderr_text = read_file(layout.stderr_log());
  EXPECT_EQ(count(stderr_text, "requeueing job"), static_cast<std::size_t>(kStops)) << stderr_text;
  EXPECT_FALSE(contains(stderr_text, "exited with code 3")) << stderr_text;
  EXPECT_FALSE(contains(read_file(layout.diagnoses()), "exited with code")) << "no false diagnosis";

  // Every tile exactly once in the outputs, whatever run computed it.
  const auto rows = read_file(out / "fake_tiles.csv");
  std::set<std::string> tiles;
  std::size_t lines = 0;
  std::istringstream in(rows);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    ++lines;
    tiles.insert(line.substr(0, line.find(',', line.find(',', line.find(',', line.find(',') + 1) + 1) + 1)));
  }
  EXPECT_EQ(lines, static_cast<std::size_t>(kTiles));
  EXPECT_EQ(tiles.size(), static_cast<std::size_t>(kTiles)) << "a tile is listed twice";
}

}  // namespace
