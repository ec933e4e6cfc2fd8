// The plugin's watchdog across hosts: a rank on the second host that never arrives, or
// stalls after rendezvous, ends the whole step on both hosts within the timeout and a
// few seconds; the diagnosis names the rank and its host; nothing is left running. A
// rank over the job's memory is named as such, and an mgpr job is then not requeued.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "job_state.hpp"
#include "mgpr/log_layout.hpp"

#include "slurm/multi_node/multi_node_support.hpp"

namespace {

using mgpr::test::contains;
using mgpr::test::read_file;
using namespace mgpr::test::multi_node;

// Two hosts by two ranks running `script` with bash.
mgpr::test::TimedResult two_by_two(const fs::path& logs, const std::string& option, const std::string& script) {
  return mgpr::test::timed_srun(
      logs, {"--mgpr", option, "-N2", "--ntasks-per-node=2", "--gpus-per-node=a100:2", "bash", "-c", script});
}

// After a step ends, its slurmstepd and tasks may take a moment to go.
std::vector<std::string> strays_after_a_while() {
  std::vector<std::string> strays;
  mgpr::test::eventually(10, [&] {
    strays = stray_processes();
    return strays.empty();
  });
  return strays;
}

TEST(MultiNode, ARankOnTheSecondHostThatNeverArrivesEndsTheWholeStep) {
  const auto logs = scratch("watchdog-missing");
  // Ranks 0-2 report rendezvous; rank 3, on node2, never does.
  const auto run = two_by_two(logs, "--mgpr-timeout=5", "[ $RANK = 3 ] || touch \"$MGPR_PROGRESS_FILE\"; sleep 600");
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 5 + 8.0);
  EXPECT_TRUE(contains(run.result.err, "mgpr: deadlock: step ")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "on node2: rank 3 did not reach rendezvous within 5 s; arrived: 0,1,2 (3 of 4)"))
      << run.result.err;
  // Both hosts' tasks were ended, not only the diagnosing host's.
  EXPECT_TRUE(contains(run.result.err, "node1: tasks 0-1: Terminated")) << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "on node2: rank 3 did not reach rendezvous"));
  EXPECT_EQ(strays_after_a_while(), std::vector<std::string>{});
}

TEST(MultiNode, ARankOnTheSecondHostThatStallsAfterRendezvousEndsTheWholeStep) {
  const auto logs = scratch("watchdog-stall");
  // Every rank reports rendezvous and keeps reporting, but rank 2 (node2) stops after one report.
  const auto run = two_by_two(logs, "--mgpr-stall=4",
                              "touch \"$MGPR_PROGRESS_FILE\"; [ $RANK = 2 ] && sleep 600; "
                              "while :; do touch \"$MGPR_PROGRESS_FILE\"; sleep 1; done");
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 4 + 8.0);
  EXPECT_TRUE(contains(run.result.err, "mgpr: stall: step ")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "on node2: rank 2 made no progress")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "node1: tasks 0-1: Terminated")) << run.result.err;
  EXPECT_EQ(strays_after_a_while(), std::vector<std::string>{});
}

// A rank on the second host killed with SIGKILL ends the whole step within seconds, with
// its rank, host and signal named.
TEST(MultiNode, ARankKilledOnTheSecondHostEndsTheWholeStepWithinSeconds) {
  const auto logs = scratch("watchdog-killed");
  const auto run = two_by_two(logs, "--mgpr-stall=600", "[ $RANK = 3 ] && sleep 2 && kill -9 $$; sleep 600");
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 2 + 8.0);
  EXPECT_TRUE(contains(run.result.err, "on node2 was killed by signal 9 (SIGKILL")) << run.result.err;
  EXPECT_TRUE(contains(run.result.err, "node1: tasks 0-1: Terminated")) << run.result.err;
  EXPECT_TRUE(contains(read_file(logs / "endings.log"), " killed 3 node2")) << read_file(logs / "endings.log");
  EXPECT_EQ(strays_after_a_while(), std::vector<std::string>{});
}

// A rank over the job's memory limit (--mem, enforced by the nodes' memory cgroups) is
// killed by the kernel; the plugin reads the kill in the step's cgroup and says so.
TEST(MultiNode, ARankOverTheJobsMemoryLimitIsReportedAsOutOfMemory) {
  const auto logs = scratch("watchdog-oom");
  const auto run = mgpr::test::timed_srun(
      logs, {"--mgpr", "-N2", "--ntasks-per-node=1", "--gpus-per-node=a100:1", "--mem=128M", "bash", "-c",
             "if [ $RANK = 1 ]; then sleep 1; exec python3 -c 'b = bytearray(1 << 30); b[::4096] = b\"x\" * "
             "len(b[::4096])'; "
             "fi; sleep 30"});
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_LT(run.seconds, 20.0);
  // Slurm says "Out Of Memory" itself and srun may end the step before the plugin's line
  // reaches it; the diagnosis (mgpr-logs) and the job script's word are the plugin's.
  const auto diagnoses = read_file(logs / "diagnoses.log");
  EXPECT_TRUE(contains(diagnoses, "rank 1 of step")) << diagnoses;
  EXPECT_TRUE(contains(diagnoses, "on node2 was killed for memory")) << diagnoses;
  EXPECT_TRUE(contains(diagnoses, "ask for more memory (--mem)")) << diagnoses;
  EXPECT_TRUE(contains(read_file(logs / "endings.log"), " out-of-memory 1 node2")) << read_file(logs / "endings.log");
  EXPECT_EQ(strays_after_a_while(), std::vector<std::string>{});
}

// mgpr itself, with a model whose forward pass outgrows the job's memory (--mem): mgpr's
// check of the tiles in flight passes (it cannot know a model's own needs), the job's
// memory cgroup kills the ranks, and the job says so and is not requeued, since the
// same settings would be killed again.
TEST(MultiNode, AnMgprModelThatOutgrowsTheJobsMemoryIsReportedAsOutOfMemoryAndNotRequeued) {
  if (std::string(MGPR_TEST_MODEL).empty()) GTEST_SKIP() << "mgpr-test-model is not built (no LibTorch)";
  const auto dir = scratch("mgpr-out-of-memory");
  const auto logs = dir / "logs";
  const auto model = dir / "hungry.pt";
  // 3 GiB filled for every tile, against 1.5 GiB for the whole job on each node.
  const auto made = mgpr::run_command({MGPR_TEST_MODEL, "tile-mean", model.string(), "--hungry", "3072"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto started = std::chrono::steady_clock::now();
  const auto run =
      mgpr::run_command({MGPR_SUBMIT, "--nodes", "2", "--gpus", "a100:1", "--mem", "1536M", "--wait", "--log-dir",
                         logs.string(), "use_fake_data=true", "dummy_dataset_count=8", "tile_size=64", "batch_size=1",
                         "task=classify", "model=" + model.string(), "output_dir=" + (dir / "out").string()});
  EXPECT_NE(run.exit_code, 0) << run.out << run.err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 60.0);
  const auto job_id = job_id_of(run);
  const mgpr::JobLogLayout layout{logs, job_id};
  const auto stderr_text = read_file(layout.stderr_log());
  EXPECT_TRUE(contains(read_file(layout.diagnoses()), "was killed for memory")) << read_file(layout.diagnoses());
  EXPECT_TRUE(contains(read_file(layout.step_endings()), " out-of-memory ")) << read_file(layout.step_endings());
  EXPECT_TRUE(contains(stderr_text, "mgpr: not requeueing job " + job_id + ":")) << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "ask for more memory (--mem)")) << stderr_text;
  const auto state = mgpr::launcher::query_job_state(job_id);
  ASSERT_TRUE(state);
  EXPECT_TRUE(state->finished()) << state->state;
  EXPECT_NE(state->state, "COMPLETED");
  EXPECT_EQ(state->restarts, 0);
  const auto report = mgpr::run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_TRUE(contains(report.out, "was killed for memory")) << report.out;
  EXPECT_EQ(strays_after_a_while(), std::vector<std::string>{});
}

}  // namespace
