// A requeued job (the template asks for --requeue) runs again under the same id, with
// its log folder already there: the second run must work, keep the first run's output,
// and mgpr-logs must say the job restarted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "job_state.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::scratch;
namespace fs = std::filesystem;

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t found = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
  return found;
}

TEST(Requeue, ASecondRunReusesTheLogFolderAndIsReported) {
  const auto logs = scratch("requeue");
  const auto first =
      run_command({MGPR_SUBMIT, "--gpus", "a100:1", "--wait", "--log-dir", logs.string(), "use_fake_data=true",
                   "dummy_dataset_count=4", "tile_size=64", "output_dir=" + (logs / "out").string()});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::string job_id = first.out.substr(0, first.out.find('\n'));
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

}  // namespace
