// `mgpr gpus=2` with one rank SIGKILLed while the tiles run: the survivor notices during
// its loop, says in plain words which rank the run lost and where (no library's stack
// frames), and ends at once, well within the launcher's grace after its SIGTERM and
// without calling its share done; run again, the job ends with the files of a run that
// was never interrupted. Rank 0 names the tiles a lost rank held.
#include <gtest/gtest.h>
#include <signal.h>

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <thread>

#include "mgpr/process.hpp"
#include "support/journal_count.hpp"
#include "support/process.hpp"
#include "support/text_search.hpp"

namespace mgpr::test {
namespace {

constexpr int kTiles = 8 * 6;  // 400 x 272 in tiles of 64 overlapping by 16

// The ranks `mgpr gpus=N` started: the launcher's children, rank 0 first.
std::vector<pid_t> ranks_of(pid_t launcher) {
  std::vector<pid_t> ranks;
  std::ifstream children(fmt::format("/proc/{}/task/{}/children", launcher, launcher));
  for (pid_t pid = 0; children >> pid;) ranks.push_back(pid);
  return ranks;
}

bool wait_for(const std::function<bool()>& condition, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class PeerLoss : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    std::vector<std::string> make_image{MGPR_TEST_IMAGE, image().string(), "--width", "400", "--height", "272"};
    for (const auto* square : {"10,10,8", "44,20,10", "150,100,12", "390,200,14", "300,265,9"}) {
      make_image.insert(make_image.end(), {"--square", square});
    }
    ASSERT_EQ(run_command(make_image).exit_code, 0);
    // About 0.1 s a forward pass on a 2-core machine: the run lasts long enough to be
    // cut in its middle.
    ASSERT_EQ(run_command({MGPR_TEST_MODEL, "detector", model().string(), "--slow", "600"}).exit_code, 0);
    const auto reference = run(dir_->path() / "uninterrupted", "reference")->wait(std::chrono::seconds(300));
    ASSERT_EQ(reference.code, 0) << reference.out << reference.err;
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static fs::path image() { return dir_->path() / "field.tif"; }
  static fs::path model() { return dir_->path() / "slow.pt"; }
  // mgpr over `raster` (field.tif by default) into `output`, its streams named `name`.
  static std::unique_ptr<Process> run(const fs::path& output, const std::string& name,
                                      const std::vector<std::string>& more = {"gpus=2"},
                                      const std::map<std::string, std::string>& env = {},
                                      const fs::path& raster = image()) {
    std::vector<std::string> argv{MGPR_BINARY,
                                  raster.string(),
                                  "task=detect",
                                  "model=" + model().string(),
                                  "tile_size=64",
                                  "overlap=16",
                                  "batch_size=2",
                                  "accelerator=cpu",
                                  "threads=1",
                                  "workers=1",
                                  "output_dir=" + output.string()};
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<Process>(argv, env, dir_->path(), name);
  }

  // A run started with `more`, once a few tiles are journaled: it and its ranks, rank 0
  // first (none when it journaled nothing in two minutes).
  struct MidRun {
    std::unique_ptr<Process> job;
    std::vector<pid_t> ranks;
  };
  static MidRun mid_run(const fs::path& output, const std::string& name, const std::vector<std::string>& more,
                        const std::map<std::string, std::string>& env = {}) {
    MidRun started{run(output, name, more, env), {}};
    if (wait_for([&] { return journaled_tiles(output) >= 6; }, std::chrono::seconds(120)))
      started.ranks = ranks_of(started.job->pid());
    return started;
  }
  static void expect_the_uninterrupted_files(const fs::path& output) {
    EXPECT_EQ(read_text(output / "field_detections.csv"),
              read_text(dir_->path() / "uninterrupted" / "field_detections.csv"));
  }

  // Kills rank `lost` once a few tiles are journaled, checks how the survivor ends, then
  // runs again to the end and compares with the uninterrupted run.
  static void kill_rank_and_resume(int lost, const std::string& survivor_says) {
    const auto output = dir_->path() / fmt::format("rank{}-killed", lost);
    const int survivor = 1 - lost;
    {
      const auto first = mid_run(output, fmt::format("rank{}-killed", lost), {"gpus=2"});
      ASSERT_EQ(first.ranks.size(), 2U);
      const auto killed_at = Clock::now();
      ::kill(first.ranks[static_cast<std::size_t>(lost)], SIGKILL);
      const auto ended = first.job->wait(std::chrono::seconds(60));
      const double after_kill = std::chrono::duration<double>(Clock::now() - killed_at).count();
      EXPECT_NE(ended.code, 0) << ended.err;
      EXPECT_TRUE(contains(ended.err, fmt::format("rank {} on ", lost))) << ended.err;
      EXPECT_TRUE(contains(ended.err, survivor_says)) << ended.err;
      EXPECT_TRUE(contains(ended.err, fmt::format("rank {} ends too", survivor))) << ended.err;
      for (const auto* library_words : {"frame #", "Exception raised from", "c10::"}) {
        EXPECT_FALSE(contains(ended.err, library_words)) << ended.err;
      }
      EXPECT_FALSE(contains(ended.err, "killing them")) << "the survivor outlived the launcher's grace\n" << ended.err;
      EXPECT_FALSE(contains(ended.out, fmt::format("rank {}: done", survivor))) << ended.out;
      EXPECT_LT(after_kill, 5.0) << ended.err;
      // Rank 0 names what a lost rank held from its book of leases on the store (the
      // writer's own rank, lost, takes the store with it).
      if (lost != 0) {
        EXPECT_TRUE(contains(ended.err, fmt::format("rank {} was lost holding ", lost))) << ended.err;
        EXPECT_TRUE(contains(ended.err, "field.tif tile at x ")) << ended.err;
      }
    }
    const int journaled = journaled_tiles(output);
    ASSERT_LT(journaled, kTiles) << "the run was not cut in its middle";
    const auto last = run(output, fmt::format("rank{}-resumed", lost))->wait(std::chrono::seconds(300));
    ASSERT_EQ(last.code, 0) << last.out << last.err;
    EXPECT_TRUE(contains(last.out, fmt::format("# resuming: {} of {}", journaled, kTiles))) << last.out;
    expect_the_uninterrupted_files(output);
  }

  // A copy of field.tif as a VRT whose pixels of the tile at x 192, y 48 (read as one
  // window) abort whatever rank but rank 0 reads them, through GDAL's Python pixel
  // function: a damaged block that kills its reader. Rank 0 is spared and slowed
  // (it must not claim the tile first; were it to read it, the run would end with it), so
  // the other ranks meet the block: the first one lost with it, then the one it is
  // handed to.
  static fs::path poisoned_copy() {
    const auto base = dir_->path() / "base.vrt";
    EXPECT_EQ(run_command({"gdal_translate", "-q", "-of", "VRT", image().string(), base.string()}).exit_code, 0);
    auto text = read_text(base);
    const std::string band = R"(<VRTRasterBand dataType="Byte" band="1")";
    const auto at = text.find(band);
    EXPECT_NE(at, std::string::npos) << text;
    const std::string poisoned = band + R"( subClass="VRTDerivedRasterBand">)" +
                                 R"(<PixelFunctionType>poisoned</PixelFunctionType>)" +
                                 R"(<PixelFunctionLanguage>Python</PixelFunctionLanguage><PixelFunctionCode><![CDATA[
import os
import time
def poisoned(in_ar, out_ar, xoff, yoff, xsize, ysize, raster_xsize, raster_ysize, buf_radius, gt, **kwargs):
    if os.environ.get("RANK") == "0":
        time.sleep(0.03)
    elif (xoff, yoff, xsize, ysize) == (192, 48, 64, 64):
        os.abort()
    out_ar[:] = in_ar[0]
]]></PixelFunctionCode>)";
    // The band's tag as GDAL wrote it gives way to the poisoned one.
    const auto band_end = text.find('>', at);
    text.replace(at, band_end - at + 1, poisoned);
    const auto copy = dir_->path() / "poison.vrt";
    std::ofstream(copy) << text;
    return copy;
  }

  static std::unique_ptr<TempDir> dir_;
};

std::unique_ptr<TempDir> PeerLoss::dir_;

TEST_F(PeerLoss, RankOneKilledMidRunEndsRankZeroAtOnceAndTheRunResumes) {
  kill_rank_and_resume(1, "ended in the middle of the run");
}

TEST_F(PeerLoss, RankZeroKilledMidRunEndsRankOneAtOnceAndTheRunResumes) {
  kill_rank_and_resume(0, "stopped answering rank 1");
}

// on_rank_loss=continue: rank 1 of 3 SIGKILLed while it holds a lease; the others go on,
// the live ranks do again the tiles it held, and the run ends complete with the files of the
// uninterrupted run and every tile once (no journal left, nothing to resume).
TEST_F(PeerLoss, UnderContinueALostRankIsDoneWithoutAndTheRunEndsComplete) {
  const auto output = dir_->path() / "continued";
  const auto logs = dir_->path() / "logs";
  const auto started =
      mid_run(output, "continued", {"gpus=3", "on_rank_loss=continue"}, {{"MGPR_LOG_DIR", (logs / "7").string()}});
  ASSERT_EQ(started.ranks.size(), 3U);
  ::kill(started.ranks[1], SIGKILL);
  const auto ended = started.job->wait(std::chrono::seconds(120));
  EXPECT_EQ(ended.code, 0) << ended.out << ended.err;
  EXPECT_TRUE(contains(ended.err, "rank 1 was killed by signal 9")) << ended.err;
  EXPECT_TRUE(contains(ended.err, "the others go on without it (on_rank_loss=continue)")) << ended.err;
  EXPECT_TRUE(contains(ended.err, "rank 0: rank 1 on ")) << ended.err;
  EXPECT_TRUE(contains(ended.err, "which the live ranks do again")) << ended.err;
  EXPECT_FALSE(contains(ended.err, "frame #")) << ended.err;
  EXPECT_TRUE(contains(ended.out, "rank 2: done")) << ended.out;
  EXPECT_FALSE(fs::exists(output / ".mgpr-journal")) << "a complete run leaves no journal";
  // Rank 0's summary records the loss: when, why and the tiles done again.
  const auto report = run_command({MGPR_LOGS, "--log-dir", logs.string(), "--no-slurm", "7"});
  EXPECT_TRUE(contains(report.out, "lost ranks (1):")) << report.out << report.err;
  EXPECT_TRUE(contains(report.out, "s into the loop: rank 1 on ")) << report.out;
  EXPECT_TRUE(contains(report.out, "done again by the live ranks: field.tif tile at x ")) << report.out;
  expect_the_uninterrupted_files(output);
}

// on_rank_loss=continue: rank 1 of 3 stopped (SIGSTOP) past peer_timeout is declared
// lost and the run goes on; continued, it learns so and ends, and none of its late
// results are used (fencing): the files are the uninterrupted run's.
TEST_F(PeerLoss, UnderContinueARankStoppedPastPeerTimeoutIsFencedAndTheRunEndsComplete) {
  const auto output = dir_->path() / "fenced";
  const auto started = mid_run(output, "fenced", {"gpus=3", "on_rank_loss=continue", "peer_timeout=2"});
  ASSERT_EQ(started.ranks.size(), 3U);
  ::kill(started.ranks[1], SIGSTOP);
  // Continued once rank 0 went on without it, while rank 0 still does its tiles again.
  EXPECT_TRUE(
      wait_for([&] { return contains(read_text(dir_->path() / "fenced.stderr"), "the run goes on without it"); },
               std::chrono::seconds(60)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(started.ranks[1], SIGCONT);
  const auto ended = started.job->wait(std::chrono::seconds(120));
  EXPECT_EQ(ended.code, 0) << ended.out << ended.err;
  EXPECT_TRUE(contains(ended.err, "showed no sign of life for 2 s")) << ended.err;
  EXPECT_TRUE(contains(ended.err, "rank 1: rank 0 went on without this rank")) << ended.err;
  EXPECT_TRUE(contains(ended.err, "the others go on without it (on_rank_loss=continue)")) << ended.err;
  expect_the_uninterrupted_files(output);
}

// on_rank_loss=continue, 3 ranks: the rank that reads the damaged block is lost; its
// tiles are handed again one at a time, so the rank the damaged tile goes to is lost for
// it alone; lost twice, the tile is skipped and named rather than handed to a third (nor
// to rank 0), and the run finishes without it: exit 1, "finished with 1 tile(s)
// skipped", every other tile's results the uninterrupted run's, the journal kept for a
// rerun to do only that tile.
TEST_F(PeerLoss, UnderContinueATileLostWithTwoRanksIsSkippedAndNamedAndTheRunFinishes) {
  const auto copy = poisoned_copy();
  const auto output = dir_->path() / "poisoned";
  const auto ended =
      run(output, "poisoned", {"gpus=3", "on_rank_loss=continue"}, {{"GDAL_VRT_ENABLE_PYTHON", "YES"}}, copy)
          ->wait(std::chrono::seconds(240));
  EXPECT_EQ(ended.code, 1) << ended.out << ended.err;
  EXPECT_TRUE(contains(ended.err, "rank 1 was killed by signal 6")) << ended.err;
  EXPECT_TRUE(contains(ended.err, "rank 2 was killed by signal 6")) << ended.err;
  EXPECT_TRUE(contains(ended.err,
                       "poison.vrt tile at x 192, y 48 was being done by 2 ranks when each was lost; it is "
                       "skipped"))
      << ended.err;
  EXPECT_TRUE(contains(ended.out, "# finished with 1 tile(s) skipped")) << ended.out;
  EXPECT_TRUE(contains(ended.out, "#   poison.vrt tile at x 192, y 48")) << ended.out;
  EXPECT_TRUE(fs::exists(output / ".mgpr-journal")) << "the skipped tile is left for a rerun";
  // The tile holds no object: every result is the uninterrupted run's.
  auto csv = read_text(output / "poison_detections.csv");
  for (auto at = csv.find("poison.vrt"); at != std::string::npos; at = csv.find("poison.vrt", at)) {
    csv.replace(at, std::string("poison.vrt").size(), "field.tif");
  }
  EXPECT_EQ(csv, read_text(dir_->path() / "uninterrupted" / "field_detections.csv"));
}

// Rank 0 holds the store and the writer: losing it ends the run under continue too.
TEST_F(PeerLoss, UnderContinueLosingRankZeroStillEndsTheRun) {
  const auto output = dir_->path() / "continued-rank0";
  const auto started = mid_run(output, "continued-rank0", {"gpus=2", "on_rank_loss=continue"});
  ASSERT_EQ(started.ranks.size(), 2U);
  ::kill(started.ranks[0], SIGKILL);
  const auto ended = started.job->wait(std::chrono::seconds(60));
  EXPECT_NE(ended.code, 0) << ended.err;
  EXPECT_TRUE(contains(ended.err, "stopped answering rank 1")) << ended.err;
}

}  // namespace
}  // namespace mgpr::test
