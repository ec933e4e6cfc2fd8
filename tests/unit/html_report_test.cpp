// mgpr-logs --html: the page's parts, drawn from summaries made here (a finished job, a
// stall, a failure, hostile text, a quicklook). tests/slurm renders a real job's page
// in headless Chromium.
#include "html_report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "job_report.hpp"
#include "report_charts.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"
#include "timeline_rows.hpp"

namespace fs = std::filesystem;
using namespace mgpr::launcher;

namespace {

using mgpr::test::contains;
using mgpr::test::count;

// A rank that did a tile a second for `seconds`, starting `late` seconds after 1e9.
mgpr::RankSummary rank(int number, int seconds, double late = 0) {
  mgpr::RankSummary r;
  r.job_id = "77";
  r.rank = number;
  r.world_size = 2;
  r.host = number < 2 ? "node1" : "node2";
  r.device = "cuda:" + std::to_string(number % 2);
  r.gpu_name = "NVIDIA A100";
  r.tiles = seconds;
  r.elapsed_s = seconds;
  r.model_s = seconds * 0.9;
  r.started_unix_s = 1e9 + late;
  for (int t = 0; t <= seconds; ++t) r.timeline.push_back({static_cast<double>(t), t, 0.0});
  return r;
}

JobReport finished_job(std::vector<mgpr::RankSummary> ranks) {
  JobReport job;
  job.job_id = "77";
  job.slurm = JobState{"COMPLETED", 0, 0, 1, "scontrol"};
  job.ranks = std::move(ranks);
  job.has_logs = true;
  job.log_dir = "/home/ana/slurm_logs/77";
  job.batch_script = "#!/bin/bash\n#SBATCH --gpus-per-node=2\nsrun --mgpr=x mgpr image_path=a.tif\n";
  job.config_text = "image_path = \"a.tif\"\n";
  job.diagnoses = {"geometry: ok"};
  job.stderr_tail = {"last words"};
  return job;
}

std::string page_of(const JobReport& job, const std::vector<ReportImage>& images = {}) {
  return html_report(job, images, {}, "Written now");
}

}  // namespace

TEST(HtmlReport, AFinishedJobHasEveryPartAndNothingToFetchOrRun) {
  const auto page = page_of(finished_job({rank(0, 10), rank(1, 12, 0.5)}));
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  for (const char* part : {"<h2 id=\"job\">", "<h2 id=\"ranks\">", "<h2 id=\"timeline\">", "<h2 id=\"throughput\">",
                           "<h2 id=\"problems\">", "finished", "COMPLETED", "1 time(s)", "1x2", "node1",
                           "srun --mgpr=x mgpr image_path=a.tif", "image_path = &quot;a.tif&quot;", "geometry: ok",
                           "last words", "NVIDIA A100"}) {
    EXPECT_TRUE(contains(page, part)) << part;
  }
  // A row per rank, a bar per interval, a "done" mark per rank.
  EXPECT_EQ(count(page, "class=\"label\">rank "), 2U);
  EXPECT_EQ(count(page, "<rect class=\"work\""), 10U + 12U);
  EXPECT_EQ(count(page, "class=\"end-ok\""), 2U);
  EXPECT_EQ(count(page, "class=\"stall\""), 0U);
  // Self-contained: no script, no external stylesheet, image or font.
  EXPECT_FALSE(contains(page, "<script"));
  EXPECT_FALSE(std::regex_search(page, std::regex(R"re((src|href)\s*=\s*"(https?:)?//)re")));
  EXPECT_FALSE(contains(page, "@import"));
  EXPECT_FALSE(contains(page, "url(http"));
}

// The rasters that failed are listed by name with their reason, escaped, and
// the verdict says so; a job without any has no such section.
TEST(HtmlReport, FailedRastersAreListedWithTheirReason) {
  auto first = rank(0, 10);
  first.failed_rasters = {{"/data/NEON_<b>.tif", "TIFFReadEncodedTile failed"}};
  auto second = rank(1, 12);
  second.failed_rasters = first.failed_rasters;
  const auto page = page_of(finished_job({first, second}));
  EXPECT_TRUE(contains(page, "<h2 id=\"failed-rasters\">Failed rasters</h2>")) << page;
  EXPECT_TRUE(contains(page, "1 raster(s) could not be read")) << page;
  EXPECT_TRUE(contains(page,
                       "<td>/data/NEON_&lt;b&gt;.tif</td><td class=\"error\">TIFFReadEncodedTile failed</td>"
                       "<td class=\"n\">0, 1</td>"))
      << page;
  EXPECT_TRUE(contains(page, "verdict bad\">finished; 1 raster(s) failed")) << page;
  EXPECT_FALSE(contains(page, "NEON_<b>"));
  EXPECT_FALSE(contains(page_of(finished_job({rank(0, 10)})), "failed-rasters"));
}

// A rank the run lost, as rank 0 recorded it, escaped; a run that lost none shows no section.
TEST(HtmlReport, LostRanksAreListedWithWhyAndTheirTiles) {
  auto first = rank(0, 10);
  first.lost_ranks = {{1, "gpu<2>", 0, "rank 1 ended in the middle of the run", 2, true, {"a.tif tile at x 0, y 0"}}};
  const auto page = page_of(finished_job({first}));
  EXPECT_TRUE(contains(page, "<h2 id=\"lost-ranks\">Lost ranks</h2>")) << page;
  EXPECT_TRUE(contains(page,
                       "<li class=\"error\">rank 1 on gpu&lt;2&gt; lost: rank 1 ended in the middle of the run; "
                       "it held 2 tile(s) whose results had not come, done again by the live ranks: a.tif tile at x 0, "
                       "y 0; …</li>"))
      << page;
  EXPECT_FALSE(contains(page_of(finished_job({rank(0, 10)})), "lost-ranks"));
}

// The run's model card and class names, from the ranks' summaries, with each
// label's value beside its name (what the CSVs and class rasters hold), escaped; a run
// without either shows neither row.
TEST(HtmlReport, TheModelAndItsClassNamesAreShown) {
  auto first = rank(0, 10);
  first.model_card = "DeepForest <tree> crowns 1.4.0 (MIT), card: task, class_names";
  first.class_names = {"__background__", "person", "traffic light"};
  auto second = rank(1, 12);
  second.model_card = first.model_card;
  second.class_names = first.class_names;
  const auto page = page_of(finished_job({first, second}));
  EXPECT_TRUE(contains(page,
                       "<tr><th>Model</th><td>DeepForest &lt;tree&gt; crowns 1.4.0 (MIT), card: task, "
                       "class_names</td></tr>"))
      << page;
  EXPECT_TRUE(contains(page, "<tr><th>Classes</th><td>0 __background__, 1 person, 2 traffic light</td></tr>")) << page;
  EXPECT_EQ(count(page, "<th>Classes</th>"), 1U);
  const auto plain = page_of(finished_job({rank(0, 10)}));
  EXPECT_FALSE(contains(plain, "<th>Model</th>"));
  EXPECT_FALSE(contains(plain, "<th>Classes</th>"));
}

// Rank 1 started 0.5 s later: its bars begin to the right of rank 0's, on the same axis.
TEST(HtmlReport, RanksOfDifferentStartsShareOneTimeAxis) {
  const auto svg = timeline_svg(std::vector{rank(0, 10), rank(1, 10, 5)});
  std::vector<double> starts;
  const std::regex bar_start(R"re(<rect class="work" x="([0-9.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar_start); it != std::sregex_iterator(); ++it) {
    starts.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(starts.size(), 20U);
  // 15 s in all: rank 1's first bar (at 5 s) is a third of the way along rank 0's.
  EXPECT_NEAR(starts[10] - starts[0], (starts[9] - starts[0]) * 5.0 / 9.0, 1.0);
}

TEST(HtmlReport, AStallAndAFailureAreDrawnWhereTheyHappened) {
  auto stalled = rank(1, 10);
  stalled.timeline.push_back({70, 10, 0});  // a minute without a tile
  stalled.status = mgpr::RankStatus::kFailed;
  stalled.error = "rank 0 stopped beating";
  auto job = finished_job({rank(0, 10), stalled});
  job.slurm = JobState{"FAILED", 1, 0, 0, "sacct"};
  const auto page = page_of(job);
  EXPECT_TRUE(contains(page, "1 of 2 rank(s) did not finish"));
  EXPECT_TRUE(contains(page, "class=\"verdict bad\""));
  EXPECT_EQ(count(page, "class=\"stall\""), 1U);
  EXPECT_TRUE(contains(page, "stall: no tile finished for 60.0 s (10.0–70.0 s)"));
  EXPECT_EQ(count(page, "class=\"end-failed\""), 1U);
  EXPECT_TRUE(contains(page, "<title>failed at 70.0 s with 10 tiles: rank 0 stopped beating</title>"));
  EXPECT_TRUE(contains(page, "<li class=\"error\">rank 1 (failed): rank 0 stopped beating</li>"));
}

TEST(HtmlReport, StallsAreJudgedAgainstTheRanksOwnPace) {
  auto fast = rank(0, 10);
  EXPECT_EQ(stall_threshold_s(fast), 5);  // never under 5 s
  mgpr::RankSummary slow;
  for (int t = 0; t <= 100; t += 20) slow.timeline.push_back({static_cast<double>(t), t / 20, 0});
  EXPECT_EQ(stall_threshold_s(slow), 80);  // a batch every 20 s is not a stall
}

TEST(HtmlReport, WaitingForDataIsMarked) {
  auto waiting = rank(0, 4);
  for (auto& point : waiting.timeline) point.data_wait_s = point.t_s * 0.5;  // half of every second
  const auto svg = timeline_svg(std::vector{waiting});
  EXPECT_EQ(count(svg, "<rect class=\"wait\""), 4U);
  EXPECT_TRUE(contains(svg, "waited 50% of the time for data"));
}

// Host names, errors and stderr come from the job: shown as text, never as markup.
TEST(HtmlReport, TextFromTheJobIsEscaped) {
  auto hostile = rank(0, 3);
  hostile.host = "<script>alert(1)</script>";
  hostile.error = "\"><img src=x onerror=alert(1)>";
  hostile.status = mgpr::RankStatus::kFailed;
  auto job = finished_job({hostile});
  job.stderr_tail = {"</pre><script>bad()</script>\x1b[2J"};
  const auto page = page_of(job);
  EXPECT_FALSE(contains(page, "<script"));
  EXPECT_FALSE(contains(page, "<img src=x"));
  EXPECT_FALSE(contains(page, "\x1b"));
  EXPECT_TRUE(contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_TRUE(contains(page, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
  EXPECT_TRUE(contains(page, "\\x1b[2J"));
}

// A configuration or a log in <pre> keeps its lines.
TEST(HtmlReport, LineBreaksSurviveEscaping) {
  EXPECT_EQ(html_text("a = 1\nb = \"<x>\"\n\x07"), "a = 1\nb = &quot;&lt;x&gt;&quot;\n\\x07");
  EXPECT_EQ(html_text(""), "");
  EXPECT_EQ(html_text("\n"), "\n");
}

TEST(HtmlReport, SummariesWithoutATimelineSaySo) {
  auto old = rank(0, 3);
  old.timeline.clear();
  old.started_unix_s = 0;
  const auto page = page_of(finished_job({old}));
  EXPECT_TRUE(contains(page, "No rank recorded a timeline"));
  EXPECT_TRUE(contains(page, "<h2 id=\"ranks\">"));
}

TEST(HtmlReport, TheQuicklookIsEmbeddedAndAMissingOneNamed) {
  mgpr::test::TempDir scratch{"mgpr-html-"};
  const auto png = scratch.path() / "scene_quicklook.png";
  std::ofstream(png, std::ios::binary) << std::string("\x89PNG\r\n\x1a\nab", 10);
  const auto not_png = scratch.path() / "other_quicklook.png";
  std::ofstream(not_png) << "GIF89a";
  auto writer = rank(0, 3);
  writer.outputs = {(scratch.path() / "scene_boxes.gpkg").string(), png.string(), not_png.string(),
                    (scratch.path() / "gone_quicklook.png").string()};
  const auto job = finished_job({writer});
  std::vector<std::string> notes;
  const auto images = quicklooks_of(job, notes);
  ASSERT_EQ(images.size(), 1U);
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_TRUE(contains(notes[0], "other_quicklook.png: not shown: not a PNG file")) << notes[0];
  EXPECT_TRUE(contains(notes[1], "gone_quicklook.png: not shown:")) << notes[1];
  const auto page = html_report(job, images, notes, "now");
  EXPECT_TRUE(contains(page, "src=\"data:image/png;base64,iVBORw0KGgphYg==\""));
  EXPECT_TRUE(contains(page, "gone_quicklook.png: not shown:"));
}

TEST(HtmlReport, ThroughputIsSummedPerHostAndDevice) {
  auto a = rank(0, 10);  // node1 cuda:0, 1 tile/s
  auto b = rank(1, 10);  // node1 cuda:1
  auto c = rank(2, 10);  // node2 cuda:0
  c.tiles = 30;          // 3 tiles/s
  const auto svg = throughput_svg(std::vector{a, b, c});
  EXPECT_EQ(count(svg, "<rect "), 3U);
  EXPECT_TRUE(contains(svg, "node2 · cuda:0 (NVIDIA A100)</text>"));
  EXPECT_TRUE(contains(svg, "3.00 tiles/s"));
  EXPECT_EQ(count(svg, "1.00 tiles/s"), 2U);
}

namespace {

// `count` ranks, `per_host` on each host, each with a timeline of 256 points over an hour
// (a thinned timeline's most); rank 37, when there is one, failed half-way.
std::vector<mgpr::RankSummary> many_ranks(int count, int per_host) {
  std::vector<mgpr::RankSummary> ranks;
  for (int number = 0; number < count; ++number) {
    auto r = rank(number, 0);
    r.world_size = count;
    r.host = "node" + std::to_string(number / per_host);
    r.device = "cuda:" + std::to_string(number % per_host);
    r.timeline.clear();
    for (int point = 0; point < 256; ++point) {
      r.timeline.push_back({point * 14.0, point * 50, point * 0.7});
    }
    r.tiles = r.timeline.back().tiles;
    r.elapsed_s = r.timeline.back().t_s;
    if (number == 37) {
      r.status = mgpr::RankStatus::kFailed;
      r.error = "CUDA error: an illegal memory access";
      r.timeline.resize(128);
    }
    ranks.push_back(r);
  }
  return ranks;
}

}  // namespace

// 16 ranks: a timeline row each; 256 ranks on 32 hosts: a row per host, the failed rank's
// host marked failed with the rank named, and the page stays small enough to open.
TEST(HtmlReport, ManyRanksStayReadable) {
  const auto sixteen = page_of(finished_job(many_ranks(16, 2)));
  EXPECT_EQ(count(sixteen, "class=\"end-ok\""), 16U);
  EXPECT_TRUE(contains(sixteen, "a row per rank"));

  const auto job = finished_job(many_ranks(256, 8));
  const auto page = page_of(job);
  EXPECT_TRUE(contains(page, "a row per host"));
  EXPECT_EQ(count(page, "class=\"end-ok\""), 31U);
  EXPECT_EQ(count(page, "class=\"end-failed\""), 1U);
  EXPECT_TRUE(contains(page, "node4 · 8 ranks (32–39)")) << "the failed rank's host";
  EXPECT_TRUE(contains(page, "rank 37: CUDA error: an illegal memory access"));
  EXPECT_LT(page.size(), 3U << 19) << "a page of " << page.size() << " bytes";
  // The rank table keeps every rank: a row each.
  EXPECT_EQ(count(page, "<tr><td class=\"n\">"), 256U);
  const auto table = rank_table(job);
  EXPECT_EQ(count(table, " cuda:"), 256U);
  EXPECT_TRUE(contains(table, "total: 256 rank(s)"));
}

// A host's row adds its ranks' tiles on one time axis, however their points fall.
TEST(HtmlReport, AHostsRowAddsItsRanksTiles) {
  auto ranks = many_ranks(40, 8);
  ranks[1].started_unix_s += 7;  // a rank that started later ends later
  const auto rows = timeline_rows(ranks, 10);
  ASSERT_EQ(rows.size(), 5U);
  const auto& first = rows.front().activity;
  EXPECT_EQ(rows.front().label, "node0 · 8 ranks (0–7)");
  ASSERT_EQ(first.timeline.size(), 11U);
  EXPECT_EQ(first.timeline.back().tiles, 8 * 255 * 50);
  EXPECT_DOUBLE_EQ(first.timeline.back().t_s, 255 * 14.0 + 7);
  EXPECT_EQ(first.timeline.front().tiles, 0);
  EXPECT_NEAR(first.timeline.back().data_wait_s, 255 * 0.7, 1e-9) << "waits are averaged over the host's ranks";
  EXPECT_EQ(timeline_rows(many_ranks(32, 8)).size(), 32U) << "up to 32 ranks, a row each";
}
