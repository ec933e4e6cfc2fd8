#include "mgpr/summary.hpp"

#include <gtest/gtest.h>

#include "mgpr/error.hpp"

namespace {

mgpr::RankSummary sample(int rank, std::int64_t tiles, double elapsed) {
  mgpr::RankSummary s;
  s.job_id = "77";
  s.step_id = "0";
  s.rank = rank;
  s.world_size = 2;
  s.local_rank = rank;
  s.host = "node1";
  s.device = "cuda:" + std::to_string(rank);
  s.gpu_name = "NVIDIA A100";
  s.tiles = tiles;
  s.elapsed_s = elapsed;
  s.model_s = elapsed / 2;
  s.memory_avg_bytes = 1 << 30;
  s.memory_peak_bytes = 3LL << 30;
  s.memory_total_bytes = 80LL << 30;
  s.memory_device_peak_bytes = 4LL << 30;
  s.batches = tiles / 4;
  s.read_s = elapsed / 3;
  s.data_wait_s = 0.25;
  s.warnings = {"slow reader"};
  return s;
}

TEST(Summary, JsonRoundTrip) {
  const auto original = sample(1, 120, 12.0);
  EXPECT_EQ(mgpr::rank_summary_from_json(mgpr::to_json_text(original), "x"), original);
  EXPECT_DOUBLE_EQ(original.tiles_per_s(), 10.0);
  EXPECT_DOUBLE_EQ(original.busy_percent(), 50.0);
}

TEST(Summary, StatusSurvivesRoundTrip) {
  auto failed = sample(0, 3, 1.0);
  failed.status = mgpr::RankStatus::kFailed;
  failed.error = "CUDA out of memory";
  EXPECT_EQ(mgpr::rank_summary_from_json(mgpr::to_json_text(failed), "x").status, mgpr::RankStatus::kFailed);
}

TEST(Summary, BrokenFilesAreNamed) {
  const auto message = [](std::string_view text) {
    try {
      mgpr::rank_summary_from_json(text, "slurm_logs/5/rank-00000.json");
    } catch (const mgpr::UsageError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{\"schema\": 1, \"job_id\"").find("slurm_logs/5/rank-00000.json: not a valid summary (broken"),
            std::string::npos);
  EXPECT_NE(message("{\"schema\": 99}").find("schema 99"), std::string::npos);
  EXPECT_NE(message("{\"schema\": 1}").find("not a valid summary"), std::string::npos);
}

TEST(Summary, Totals) {
  const std::vector ranks{sample(0, 100, 10.0), sample(1, 50, 20.0)};
  const auto totals = mgpr::total(ranks);
  EXPECT_EQ(totals.ranks, 2);
  EXPECT_EQ(totals.tiles, 150);
  EXPECT_DOUBLE_EQ(totals.elapsed_s, 20.0);
  EXPECT_DOUBLE_EQ(totals.tiles_per_s(), 7.5);
  EXPECT_EQ(totals.warnings, 2U);
  EXPECT_EQ(totals.failed_ranks, 0);
}

}  // namespace
