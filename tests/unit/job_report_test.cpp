// mgpr-logs on fixture log folders, one per state a job can be in, and on the text
// Slurm's commands print (scontrol, sacct), so every verdict is checked without a
// cluster. The real-cluster tests (tests/slurm) check the same against live jobs.
#include "job_report.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "job_state.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/summary.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"

namespace fs = std::filesystem;
using namespace mgpr::launcher;

namespace {

using mgpr::test::contains;

JobState slurm_state(std::string state, int exit_code = 0, int restarts = 0) {
  JobState out;
  out.state = std::move(state);
  out.exit_code = exit_code;
  out.restarts = restarts;
  out.source = "scontrol";
  return out;
}

class JobReportFixture : public ::testing::Test {
 protected:
  mgpr::test::TempDir scratch_{"mgpr-report-"};

  [[nodiscard]] mgpr::JobLogLayout layout() const { return {root_, "4242"}; }

  void write_rank(int rank, mgpr::RankStatus status, std::string error = "",
                  std::vector<mgpr::RasterFailureRecord> failed_rasters = {}) const {
    mgpr::RankSummary summary;
    summary.job_id = "4242";
    summary.rank = rank;
    summary.world_size = 2;
    summary.local_rank = rank;
    summary.host = "gpu01";
    summary.device = "cuda:" + std::to_string(rank);
    summary.tiles = 100;
    summary.elapsed_s = 10;
    summary.model_s = 5;
    summary.status = status;
    summary.error = std::move(error);
    summary.failed_rasters = std::move(failed_rasters);
    fs::create_directories(layout().job_dir());
    mgpr::write_file_atomically(layout().rank_summary(rank), mgpr::to_json_text(summary));
  }

  static void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

  [[nodiscard]] JobReport report(std::optional<JobState> slurm) const {
    auto out = load_job_report(layout(), false);
    out.slurm = std::move(slurm);
    return out;
  }

  fs::path root_ = scratch_.path();
};

TEST_F(JobReportFixture, UnknownJob) {
  const auto job = report(std::nullopt);
  EXPECT_FALSE(job.has_logs);
  EXPECT_TRUE(contains(job.verdict(), "unknown job")) << job.verdict();
}

TEST_F(JobReportFixture, PendingJobNeverStarted) {
  fs::create_directories(layout().job_dir());  // mgpr-submit keeps job.sbatch there at once
  EXPECT_TRUE(contains(report(slurm_state("PENDING")).verdict(), "pending: the job has not started yet"));
}

TEST_F(JobReportFixture, RunningJob) {
  write_rank(0, mgpr::RankStatus::kOk);
  EXPECT_TRUE(contains(report(slurm_state("RUNNING")).verdict(), "running"));
}

TEST_F(JobReportFixture, CancelledJob) {
  fs::create_directories(layout().job_dir());
  EXPECT_EQ(report(slurm_state("CANCELLED")).verdict(), "cancelled");
}

TEST_F(JobReportFixture, DiedWithoutASummary) {
  write(layout().stderr_log(), "srun: error: gpu01: task 0: Killed\n");
  const auto job = report(slurm_state("FAILED", 137));
  EXPECT_TRUE(contains(job.verdict(), "no summary")) << job.verdict();
  const auto table = rank_table(job);
  EXPECT_TRUE(contains(table, "Slurm: FAILED, exit code 137")) << table;
  EXPECT_TRUE(contains(table, "last lines of stderr:\n  srun: error: gpu01: task 0: Killed")) << table;
}

// A job's stderr can hold terminal escape sequences (a title change, a
// cursor move that hides lines); mgpr-logs shows them as text.
TEST_F(JobReportFixture, EscapeSequencesFromTheJobArePrintedAsText) {
  write(layout().stderr_log(), "\x1b]0;pwned\x07\x1b[2Jcleared\n");
  const auto table = rank_table(report(slurm_state("FAILED", 1)));
  EXPECT_FALSE(contains(table, "\x1b")) << table;
  EXPECT_FALSE(contains(table, "\x07")) << table;
  EXPECT_TRUE(contains(table, "\\x1b]0;pwned\\x07\\x1b[2Jcleared")) << table;
}

TEST_F(JobReportFixture, LogsButSlurmForgotTheJob) {
  write(layout().stdout_log(), "");
  EXPECT_TRUE(contains(report(std::nullopt).verdict(), "no summary"));
}

TEST_F(JobReportFixture, FinishedJobShowsEveryRank) {
  write_rank(0, mgpr::RankStatus::kOk);
  write_rank(1, mgpr::RankStatus::kOk);
  write(layout().diagnoses(), "geometry: ok\n");
  const auto job = report(slurm_state("COMPLETED"));
  EXPECT_EQ(job.verdict(), "finished");
  const auto table = rank_table(job);
  EXPECT_TRUE(contains(table, "total: 2 rank(s), 200 tiles")) << table;
  EXPECT_TRUE(contains(table, "cuda:1")) << table;
  EXPECT_TRUE(contains(table, "plugin diagnoses:\n  geometry: ok")) << table;
  const auto jobs = job_table({job});
  EXPECT_TRUE(contains(jobs, "4242")) << jobs;
  EXPECT_TRUE(contains(jobs, "COMPLETED")) << jobs;
  EXPECT_TRUE(contains(jobs, " 1x2 ")) << jobs;  // nodes x GPUs, from the ranks' hosts
}

TEST_F(JobReportFixture, AFailedRankIsCountedAndItsErrorShown) {
  write_rank(0, mgpr::RankStatus::kOk);
  write_rank(1, mgpr::RankStatus::kFailed, "cannot open raster");
  const auto job = report(slurm_state("FAILED", 2));
  EXPECT_EQ(job.verdict(), "1 of 2 rank(s) did not finish");
  EXPECT_TRUE(contains(rank_table(job), "rank 1 error: cannot open raster"));
}

// A raster that failed mid-run is named with its reason, once however many
// ranks found it unreadable, in the table, the JSON and the verdict.
TEST_F(JobReportFixture, FailedRastersAreNamedWithTheirReason) {
  write_rank(0, mgpr::RankStatus::kOk, "", {{"/data/NEON_b.tif", "TIFFReadEncodedTile failed"}});
  write_rank(1, mgpr::RankStatus::kOk, "",
             {{"/data/NEON_b.tif", "TIFFReadEncodedTile failed"}, {"/data/c\x1b[2J.tif", "not a TIFF"}});
  const auto job = report(slurm_state("FAILED", 1));
  EXPECT_EQ(job.verdict(), "finished; 2 raster(s) failed");
  const auto failed = failed_rasters(job);
  ASSERT_EQ(failed.size(), 2U);
  EXPECT_EQ(failed[0].raster, "/data/NEON_b.tif");
  EXPECT_EQ(failed[0].ranks, (std::vector<int>{0, 1}));
  const auto table = rank_table(job);
  EXPECT_TRUE(contains(table, "failed rasters (2): the other rasters finished")) << table;
  EXPECT_TRUE(contains(table, "  /data/NEON_b.tif: TIFFReadEncodedTile failed (ranks 0, 1)\n")) << table;
  EXPECT_TRUE(contains(table, "  /data/c\\x1b[2J.tif: not a TIFF (rank 1)\n")) << table;
  EXPECT_FALSE(contains(table, "\x1b")) << table;
  EXPECT_TRUE(contains(job_table({job}), "finished; 2 raster(s) failed")) << job_table({job});

  const auto document = nlohmann::json::parse(jobs_json_text({job}))[0];
  ASSERT_EQ(document.at("failed_rasters").size(), 2U);
  EXPECT_EQ(document.at("failed_rasters")[0].at("raster"), "/data/NEON_b.tif");
  EXPECT_EQ(document.at("failed_rasters")[0].at("error"), "TIFFReadEncodedTile failed");
  EXPECT_EQ(document.at("failed_rasters")[0].at("ranks"), nlohmann::json::parse("[0, 1]"));
  EXPECT_EQ(document.at("ranks")[1].at("failed_rasters").size(), 2U);  // each rank's own, as it wrote them
}

TEST_F(JobReportFixture, AJobWithoutFailedRastersSaysNothingOfThem) {
  write_rank(0, mgpr::RankStatus::kOk);
  const auto job = report(slurm_state("COMPLETED"));
  EXPECT_FALSE(contains(rank_table(job), "failed rasters")) << rank_table(job);
  EXPECT_TRUE(nlohmann::json::parse(jobs_json_text({job}))[0].at("failed_rasters").empty());
}

TEST_F(JobReportFixture, AnUnreadableSummaryIsNamed) {
  write_rank(0, mgpr::RankStatus::kOk);
  write(layout().rank_summary(1), "{\"schema\": 99}");
  const auto job = report(slurm_state("COMPLETED"));
  ASSERT_EQ(job.problems.size(), 1U);
  EXPECT_TRUE(contains(job.problems[0], "rank-00001.json")) << job.problems[0];
  EXPECT_TRUE(contains(rank_table(job), "problem: ")) << rank_table(job);
}

TEST_F(JobReportFixture, RestartsAreShown) {
  write_rank(0, mgpr::RankStatus::kOk);
  const auto job = report(slurm_state("COMPLETED", 0, 2));
  EXPECT_TRUE(contains(rank_table(job), "restarted 2 time(s)")) << rank_table(job);
  EXPECT_TRUE(contains(job_table({job}), "restarted 2 time(s)")) << job_table({job});
  EXPECT_TRUE(contains(jobs_json_text({job}), "\"restarts\": 2")) << jobs_json_text({job});
  EXPECT_FALSE(contains(rank_table(report(slurm_state("COMPLETED"))), "restarted"));
}

TEST(JobStateParse, ScontrolFields) {
  const auto state = parse_scontrol_job(
      "JobId=17 JobName=mgpr UserId=root(0) JobState=COMPLETED Reason=None Dependency=(null) Requeue=1 "
      "Restarts=1 BatchFlag=2 Reboot=0 ExitCode=3:9 RunTime=00:00:01\n");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->state, "COMPLETED");
  EXPECT_EQ(state->exit_code, 3);
  EXPECT_EQ(state->signal, 9);
  EXPECT_EQ(state->restarts, 1);
  EXPECT_TRUE(state->finished());
  EXPECT_FALSE(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n"));
}

TEST(JobStateParse, StatesThatAreNotTheEnd) {
  // SIGNALING: what scontrol shows while --signal's warning before walltime goes out.
  for (const char* state : {"PENDING", "RUNNING", "REQUEUED", "COMPLETING", "CONFIGURING", "SUSPENDED", "SIGNALING",
                            "STAGE_OUT", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "STOPPED", ""}) {
    EXPECT_FALSE(slurm_state(state).finished()) << state;
  }
  for (const char* state : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
                            "BOOT_FAIL", "DEADLINE"}) {
    EXPECT_TRUE(slurm_state(state).finished()) << state;
  }
}

TEST(JobStateParse, SacctTakesTheNewestRecord) {
  // Shaped like `sacct -c` on the local cluster for a job requeued once after it ended
  // (its first run's record, then a PENDING one for the requeue), here with a second run
  // that was cancelled.
  const auto state = parse_sacct_records("17|COMPLETED|0:0\n17|PENDING|0:0\n17|CANCELLED by 0|0:15\n18|COMPLETED|0:0\n",
                                         "17", "sacct -c");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->state, "CANCELLED");
  EXPECT_EQ(state->signal, 15);
  EXPECT_EQ(state->source, "sacct -c");
  EXPECT_FALSE(parse_sacct_records("18|COMPLETED|0:0\n", "17", "sacct"));
}

}  // namespace
