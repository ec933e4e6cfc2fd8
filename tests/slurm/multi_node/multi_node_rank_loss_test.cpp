// on_rank_loss=continue across two hosts, for real: rank 2 on node2 SIGKILLed while the
// tiles run; the plugin names it and leaves the step running, the other ranks finish the
// run without it, and the job, submitted by mgpr-submit, ends COMPLETED with the output of
// an undisturbed run, every tile once. And a whole host lost: its link taken down, then
// its processes killed, so that it goes silent rather than refusing; the ranks of the
// other host finish the run with the undisturbed results.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "job_state.hpp"
#include "mgpr/log_layout.hpp"
#include "slurm/multi_node/multi_node_support.hpp"
#include "support/journal_count.hpp"
#include "support/known_squares.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::journaled_tiles;
using mgpr::test::read_file;
using namespace mgpr::test::multi_node;

// The undisturbed run's classification of every tile, each once.
void expect_every_tile_once_as(const fs::path& reference, const fs::path& output, int tiles) {
  const auto got = mgpr::test::read_csv_rows(output / "fake_tiles.csv");
  expect_same_tiles(got, mgpr::test::read_csv_rows(reference / "fake_tiles.csv"));
  EXPECT_EQ(got.size(), static_cast<std::size_t>(tiles));
}

TEST(MultiNode, UnderContinueARankKilledOnTheSecondHostIsDoneWithoutAndTheJobCompletes) {
  constexpr int kTiles = 320;  // about 20 s at 16 tiles/s
  const auto dir = scratch("rank-loss-continue");
  const auto logs = dir / "logs";
  const auto out = dir / "out";
  fs::create_directories(logs);
  const auto reference = submit_two_by_two({"--wait", "--log-dir", logs.string()}, fake_run(kTiles, 0, dir / "ref"));
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;

  // The job runs this in place of mgpr: rank 2 (node2) is killed once the run has
  // journaled 40 tiles, so it holds a lease of tiles mid-run.
  const auto mgpr_path = (fs::path(MGPR_SUBMIT).parent_path() / "mgpr").string();
  const auto wrapper = dir / "mgpr-rank-2-killed";
  std::ofstream(wrapper) << "#!/bin/bash\n"
                         << "if [ \"$RANK\" = 2 ]; then\n"
                         << "  (while [ \"$(find '" << out.string()
                         << "/.mgpr-journal' -name '*.tiles' -exec cat {} + 2>/dev/null | wc -l)\" -lt 40 ]; do\n"
                         << "    sleep 0.1\n"
                         << "  done\n"
                         << "  kill -9 $$) &\n"
                         << "fi\n"
                         << "exec " << mgpr_path << " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  auto keys = fake_run(kTiles, 0.5, out);
  keys.insert(keys.end(), {"on_rank_loss=continue", "peer_timeout=10"});
  const auto rendered = submit_two_by_two({"--dry-run", "--log-dir", logs.string()}, keys);
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  std::string script = rendered.out;
  const auto at = script.find(mgpr_path + " --config");
  ASSERT_NE(at, std::string::npos) << script;
  script.replace(at, mgpr_path.size(), wrapper.string());
  std::ofstream(dir / "job.sbatch") << script;

  const auto submitted = run_command({"sbatch", "--parsable", (dir / "job.sbatch").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const auto job_id = job_id_of(submitted);
  const mgpr::JobLogLayout layout{logs, job_id};
  std::optional<mgpr::launcher::JobState> state;
  const bool ended = mgpr::test::eventually(180, [&] {
    state = mgpr::launcher::query_job_state(job_id);
    return state && state->finished();
  });
  if (!ended) run_command({"scancel", job_id});
  ASSERT_TRUE(ended) << read_file(layout.stderr_log());
  const auto stderr_text = read_file(layout.stderr_log());
  EXPECT_EQ(state->state, "COMPLETED") << stderr_text;
  EXPECT_EQ(state->exit_code, 0) << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "rank 2 of step " + job_id + ".0 on node2 was killed by signal 9 (SIGKILL"))
      << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "not ending the step (--mgpr-on-rank-loss=continue): the run goes on without it"))
      << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "rank 0 exited with 0, the run's status")) << stderr_text;
  EXPECT_TRUE(contains(read_file(layout.diagnoses()), "on node2 was killed by signal 9"))
      << read_file(layout.diagnoses());
  EXPECT_FALSE(fs::exists(layout.step_endings())) << read_file(layout.step_endings());
  // Rank 0's summary records the loss and names the tiles the live ranks did again.
  const auto rank0 = rank_summaries(logs, job_id, 1).front();
  ASSERT_EQ(rank0.lost_ranks.size(), 1U) << read_file(layout.rank_summary(0));
  EXPECT_EQ(rank0.lost_ranks.front().rank, 2);
  EXPECT_EQ(rank0.lost_ranks.front().host, "node2");
  EXPECT_TRUE(rank0.lost_ranks.front().done_again);
  ASSERT_FALSE(rank0.lost_ranks.front().tiles.empty()) << "at least one tile handed again, named";
  EXPECT_TRUE(contains(rank0.lost_ranks.front().tiles.front(), "fake tile ")) << rank0.lost_ranks.front().tiles.front();

  expect_every_tile_once_as(dir / "ref", out, kTiles);
}

// node8 of a job on node7 and node8 goes silent mid-run: its link is taken down, then
// every process of it but slurmd is SIGKILLed (slurmd, unreachable, is silent too, and
// is left to serve the cluster again once the link is back). Rank 0 hears nothing more
// from ranks 2 and 3, names them lost within peer_timeout, and ranks 0 and 1 finish the
// run with the undisturbed results, every tile once; rank 0 exits 0, which the plugin
// records for the job script. Slurm itself ends the step only once it declares the node
// down (SlurmdTimeout): the test heals the link and cancels the job instead of waiting.
TEST(MultiNode, UnderContinueAHostGoneSilentIsDoneWithoutAndTheOtherHostFinishes) {
  constexpr int kTiles = 320;
  const auto dir = scratch("host-loss-continue");
  const auto logs = dir / "logs";
  const auto out = dir / "out";
  fs::create_directories(logs);
  const auto reference = submit_two_by_two({"--wait", "--log-dir", logs.string()}, fake_run(kTiles, 0, dir / "ref"));
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;

  auto keys = fake_run(kTiles, 0.5, out);
  keys.insert(keys.end(), {"on_rank_loss=continue", "peer_timeout=5"});
  const auto rendered = submit_two_by_two({"--dry-run", "--log-dir", logs.string()}, keys);
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  // The last two hosts, which only the scale test uses besides: a host that does not come
  // back leaves the others' tests alone.
  std::string script = rendered.out;
  const auto nodes = script.find("#SBATCH --nodes=2\n");
  ASSERT_NE(nodes, std::string::npos) << script;
  script.insert(nodes, "#SBATCH --nodelist=node7,node8\n");
  EXPECT_TRUE(contains(script, "#SBATCH --no-kill")) << script;
  std::ofstream(dir / "job.sbatch") << script;
  const auto submitted = run_command({"sbatch", "--parsable", (dir / "job.sbatch").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const auto job_id = job_id_of(submitted);
  const mgpr::JobLogLayout layout{logs, job_id};

  ASSERT_TRUE(mgpr::test::eventually(120, [&] { return journaled_tiles(out) >= 40; }))
      << read_file(layout.stderr_log());
  ASSERT_EQ(local_slurm("exec", {"node8", "ip", "link", "set", "eth0", "down"}).exit_code, 0);
  std::istringstream processes(local_slurm("processes").out);
  int killed = 0;
  for (std::string node, pid, name; processes >> node >> pid >> name;) {
    if (node != "node8" || name == "slurmd") continue;
    killed += ::kill(std::stoi(pid), SIGKILL) == 0 ? 1 : 0;
  }
  EXPECT_GE(killed, 2) << "the ranks of node8, at least";

  // Rank 0's exit status, recorded by the plugin on node7, says the survivors finished.
  const auto rank_zero_exit = logs / job_id / mgpr::kRankZeroExitFile;
  const bool finished =
      mgpr::test::eventually(180, [&] { return fs::exists(rank_zero_exit) && !read_file(rank_zero_exit).empty(); });
  const auto stderr_text = read_file(layout.stderr_log());
  local_slurm("exec", {"node8", "ip", "link", "set", "eth0", "up"});
  run_command({"scancel", job_id});
  mgpr::test::eventually(60, [&] {
    const auto state = mgpr::launcher::query_job_state(job_id);
    return state && state->finished();
  });
  run_command({"scontrol", "update", "NodeName=node8", "State=RESUME"});
  ASSERT_TRUE(finished) << stderr_text;
  EXPECT_TRUE(contains(read_file(rank_zero_exit), " 0 ")) << read_file(rank_zero_exit);
  EXPECT_TRUE(contains(stderr_text, "ranks 2-3 on node8 showed no sign of life for 5 s")) << stderr_text;
  EXPECT_TRUE(contains(stderr_text, "the run goes on without them")) << stderr_text;
  EXPECT_FALSE(fs::exists(out / ".mgpr-journal")) << "a complete run leaves no journal";
  expect_every_tile_once_as(dir / "ref", out, kTiles);
}

}  // namespace
