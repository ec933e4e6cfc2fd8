#include "mgpr/summary.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mgpr/error.hpp"
#include "support/error_of.hpp"

namespace {

mgpr::RankSummary sample(int rank, std::int64_t tiles, double elapsed) {
  mgpr::RankSummary s;
  s.job_id = "77";
  s.step_id = "0";
  s.rank = rank;
  s.world_size = 2;
  s.local_rank = rank;
  s.local_world_size = 2;
  s.node_rank = 1;
  s.master_addr = "node0";
  s.master_port = 29517;
  s.visible_devices = "2,3";
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
  s.host_peak_bytes = 5LL << 30;
  s.writer_held_peak_tiles = 300;
  s.store_requests = {{"tiles/next", tiles + 1}, {"beat", 12}};
  s.batches = tiles / 4;
  s.read_s = elapsed / 3;
  s.data_wait_s = 0.25;
  s.warnings = {"slow reader"};
  s.started_unix_s = 1795000000.25;
  s.timeline = {{0.0, 0, 0.0}, {1.5, 8, 0.25}, {elapsed, tiles, 0.25}};
  s.outputs = {"/data/out/scene_boxes.gpkg"};
  return s;
}

TEST(Summary, JsonRoundTrip) {
  const auto original = sample(1, 120, 12.0);
  EXPECT_EQ(mgpr::rank_summary_from_json(mgpr::to_json_text(original), "x"), original);
  EXPECT_DOUBLE_EQ(original.tiles_per_s(), 10.0);
  EXPECT_DOUBLE_EQ(original.busy_percent(), 50.0);
}

// Summaries written before the rendezvous fields were added still read, as one rank alone.
TEST(Summary, OlderSummariesWithoutTheRendezvousFieldsStillRead) {
  auto text = mgpr::to_json_text(sample(1, 8, 2.0));
  for (const std::string key : {"local_world_size", "node_rank", "master_addr", "master_port", "visible_devices"}) {
    const auto at = text.find("\"" + key + "\"");
    ASSERT_NE(at, std::string::npos) << key;
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  const auto read = mgpr::rank_summary_from_json(text, "x");
  EXPECT_EQ(read.local_world_size, 1);
  EXPECT_EQ(read.node_rank, 0);
  EXPECT_EQ(read.master_addr, "");
  EXPECT_EQ(read.master_port, 0);
  EXPECT_EQ(read.visible_devices, "");
  EXPECT_EQ(read.tiles, 8);
}

// The run's requests to its store, over every rank: the most asked row first.
TEST(Summary, TheStoreLineAddsEveryRanksRequestsByRow) {
  const std::vector<mgpr::RankSummary> ranks{sample(0, 100, 10.0), sample(1, 120, 12.0)};
  EXPECT_EQ(mgpr::store_requests_line(ranks),
            "store: 246 requests from 2 ranks, 1.12 a tile (tiles/next 222, beat 24)");
  EXPECT_EQ(mgpr::store_requests_line(std::vector<mgpr::RankSummary>{mgpr::RankSummary{}}), "");
}

// Rank 0's record of the ranks the run lost reads back whole, and says when, why and
// what each held in one line; a summary without it (written before it existed) reads.
TEST(Summary, LostRanksSurviveRoundTripAndAreSaidInALine) {
  auto rank0 = sample(0, 40, 4.0);
  rank0.started_unix_s = 1000;
  rank0.lost_ranks.push_back({1,
                              "gpu02",
                              1012.5,
                              "rank 1 on gpu02 ended in the middle of the run",
                              3,
                              true,
                              {"a.tif tile at x 0, y 0", "a.tif tile at x 64, y 0"}});
  const auto read = mgpr::rank_summary_from_json(mgpr::to_json_text(rank0), "x");
  EXPECT_EQ(read, rank0);
  const std::vector<mgpr::RankSummary> ranks{read};
  const auto lines = mgpr::lost_rank_lines(ranks);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(
      lines[0],
      "rank 1 on gpu02 lost 12.5 s into the loop: rank 1 on gpu02 ended in the middle of the run; it held 3 "
      "tile(s) whose results had not come, done again by the live ranks: a.tif tile at x 0, y 0; a.tif tile at x 64, y "
      "0; …");
  auto text = mgpr::to_json_text(sample(0, 8, 2.0));
  const auto at = text.find("\"lost_ranks\"");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  EXPECT_TRUE(mgpr::rank_summary_from_json(text, "x").lost_ranks.empty());
  EXPECT_THROW((void)mgpr::rank_summary_from_json(
                   std::string(mgpr::to_json_text(sample(0, 8, 2.0))).replace(at, 17, "\"lost_ranks\": 7,"), "x"),
               mgpr::UsageError);
}

TEST(Summary, StatusSurvivesRoundTrip) {
  auto failed = sample(0, 3, 1.0);
  failed.status = mgpr::RankStatus::kFailed;
  failed.error = "CUDA out of memory";
  EXPECT_EQ(mgpr::rank_summary_from_json(mgpr::to_json_text(failed), "x").status, mgpr::RankStatus::kFailed);
}

TEST(Summary, BrokenFilesAreNamed) {
  const auto message = [](std::string_view text) {
    return mgpr::test::error_of([&] { mgpr::rank_summary_from_json(text, "slurm_logs/5/rank-00000.json"); });
  };
  EXPECT_NE(message("{\"schema\": 1, \"job_id\"").find("slurm_logs/5/rank-00000.json: not a valid summary (broken"),
            std::string::npos);
  EXPECT_NE(message("{\"schema\": 99}").find("schema 99"), std::string::npos);
  EXPECT_NE(message("{\"schema\": 1}").find("not a valid summary"), std::string::npos);
}

// Found by fuzzing: a number past int's range (1e82 as a rank) was converted anyway,
// which is undefined behaviour; it is refused with the field's name.
TEST(Summary, NumbersOutOfRangeOrFractionalAreRefused) {
  const auto with = [](const std::string& key, const std::string& number) {
    auto text = mgpr::to_json_text(sample(1, 8, 2.0));
    const auto at = text.find("\"" + key + "\": ");
    const auto start = at + key.size() + 4;
    text.replace(start, text.find_first_of(",\n}", start) - start, number);
    return mgpr::test::error_of([&] { mgpr::rank_summary_from_json(text, "rank-00001.json"); });
  };
  EXPECT_NE(with("rank", "8.88889e+81").find("rank-00001.json: not a valid summary: 'rank' must be a whole number"),
            std::string::npos)
      << with("rank", "8.88889e+81");
  EXPECT_NE(with("world_size", "3000000000").find("'world_size' must be a whole number"), std::string::npos);
  EXPECT_NE(with("tiles", "18446744073709551615").find("'tiles'"), std::string::npos);
  EXPECT_NE(with("batches", "1.5").find("'batches'"), std::string::npos);
  EXPECT_EQ(with("tiles", "9223372036854775807"), "no error");
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

// Summaries written before the timeline was recorded read with an empty one.
TEST(Summary, OlderSummariesWithoutTheTimelineStillRead) {
  auto document = nlohmann::json::parse(mgpr::to_json_text(sample(0, 8, 2.0)));
  for (const char* key : {"started_unix_s", "timeline", "outputs"}) document.erase(key);
  const auto read = mgpr::rank_summary_from_json(document.dump(), "x");
  EXPECT_EQ(read.started_unix_s, 0);
  EXPECT_TRUE(read.timeline.empty());
  EXPECT_TRUE(read.outputs.empty());
  EXPECT_EQ(read.tiles, 8);
}

// The rasters a rank could not read, by name with the reason.
TEST(Summary, FailedRastersSurviveRoundTrip) {
  auto original = sample(1, 120, 12.0);
  original.failed_rasters = {
      {"/data/tiles/NEON_D01_a.tif", "cannot read window 0,0 512x512: TIFFReadEncodedTile failed"},
      {"b, with \"quotes\".tif", ""}};
  const auto text = mgpr::to_json_text(original);
  const auto document = nlohmann::json::parse(text);
  ASSERT_TRUE(document.at("failed_rasters").is_array());
  EXPECT_EQ(document.at("failed_rasters")[0].at("raster"), "/data/tiles/NEON_D01_a.tif");
  EXPECT_EQ(mgpr::rank_summary_from_json(text, "x"), original);
  EXPECT_TRUE(nlohmann::json::parse(mgpr::to_json_text(sample(0, 1, 1.0))).at("failed_rasters").empty());
}

// Summaries written before failed rasters were recorded read with none.
TEST(Summary, ClassNamesAndModelCardSurviveRoundTrip) {
  auto original = sample(0, 8, 2.0);
  original.class_names = {"__background__", "person", "traffic \"light\""};
  original.model_card = "DeepForest tree crowns 1.4.0 (MIT), card: task, class_names";
  const auto text = mgpr::to_json_text(original);
  EXPECT_NE(text.find("\"class_names\""), std::string::npos);
  EXPECT_EQ(mgpr::rank_summary_from_json(text, "x"), original);
}

// Summaries written before the two fields were added read as a run without names or card.
TEST(Summary, OlderSummariesWithoutClassNamesStillRead) {
  auto document = nlohmann::json::parse(mgpr::to_json_text(sample(0, 8, 2.0)));
  document.erase("class_names");
  document.erase("model_card");
  const auto read = mgpr::rank_summary_from_json(document.dump(), "x");
  EXPECT_TRUE(read.class_names.empty());
  EXPECT_TRUE(read.model_card.empty());
  // Not a list of text: refused naming the file, like any other malformed field.
  document["class_names"] = {"tree", 3};
  const auto message = mgpr::test::error_of<mgpr::UsageError>(
      [&] { (void)mgpr::rank_summary_from_json(document.dump(), "rank-00000.json"); });
  EXPECT_NE(message.find("rank-00000.json: not a valid summary"), std::string::npos) << message;
}

TEST(Summary, OlderSummariesWithoutFailedRastersStillRead) {
  auto document = nlohmann::json::parse(mgpr::to_json_text(sample(0, 8, 2.0)));
  document.erase("failed_rasters");
  const auto read = mgpr::rank_summary_from_json(document.dump(), "x");
  EXPECT_TRUE(read.failed_rasters.empty());
  EXPECT_EQ(read.tiles, 8);
}

TEST(Summary, MalformedFailedRastersAreRefusedNamingTheFile) {
  for (const char* list : {R"("a.tif")", R"(["a.tif"])", R"([{"error": "no raster"}])", R"([{"raster": 7}])"}) {
    auto document = nlohmann::json::parse(mgpr::to_json_text(sample(0, 8, 2.0)));
    document["failed_rasters"] = nlohmann::json::parse(list);
    const auto message = mgpr::test::error_of<mgpr::UsageError>(
        [&] { (void)mgpr::rank_summary_from_json(document.dump(), "rank-00000.json"); });
    EXPECT_NE(message.find("rank-00000.json: not a valid summary"), std::string::npos) << list << ": " << message;
  }
}

TEST(Summary, AMalformedTimelinePointIsRefusedNamingTheFile) {
  auto message = [](const std::string& point) {
    auto document = nlohmann::json::parse(mgpr::to_json_text(sample(0, 8, 2.0)));
    document["timeline"] = nlohmann::json::array({nlohmann::json::parse(point)});
    return mgpr::test::error_of([&] { mgpr::rank_summary_from_json(document.dump(), "rank-00000.json"); });
  };
  EXPECT_NE(message("[1, 2]").find("rank-00000.json: not a valid summary: a 'timeline' point must be"),
            std::string::npos);
  EXPECT_NE(message("[1, 2.5, 0]").find("'tiles' must be a whole number"), std::string::npos);
  EXPECT_NE(message("[\"soon\", 2, 0]").find("rank-00000.json: not a valid summary"), std::string::npos);
  EXPECT_EQ(message("[1, 2, 0]"), "no error");
}

TEST(TimelineRecorder, KeepsAPointPerSpacingAndEndsOnTheLastOne) {
  std::vector<mgpr::TimelinePoint> points;
  mgpr::TimelineRecorder recorder(points, 1.0, 100);
  for (int i = 0; i <= 40; ++i) recorder.record({i * 0.25, i, 0});
  ASSERT_EQ(points.size(), 11U);  // 0, 1, ..., 10 s
  EXPECT_EQ(points[4], (mgpr::TimelinePoint{4.0, 16, 0}));
  recorder.close({10.1, 41, 0.5});
  EXPECT_EQ(points.back(), (mgpr::TimelinePoint{10.1, 41, 0.5}));
  recorder.close({10.1, 42, 0.5});  // the same moment again: the newer figures replace it
  EXPECT_EQ(points.size(), 12U);
  EXPECT_EQ(points.back().tiles, 42);
}

// A long run keeps a bounded, evenly spread sample of its whole length.
TEST(TimelineRecorder, ALongRunThinsToTheCapacityAndStillCoversItsStart) {
  std::vector<mgpr::TimelinePoint> points;
  mgpr::TimelineRecorder recorder(points, 1.0, 16);
  for (int second = 0; second <= 1000; ++second) recorder.record({static_cast<double>(second), second, 0});
  EXPECT_LE(points.size(), 16U);
  EXPECT_GE(points.size(), 8U);
  EXPECT_EQ(points.front().t_s, 0);
  EXPECT_GE(points.back().t_s, 1000 - 128);
  for (std::size_t i = 1; i < points.size(); ++i) EXPECT_GT(points[i].t_s, points[i - 1].t_s);
}
