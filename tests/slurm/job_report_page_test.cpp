// mgpr-logs --html on a real job of the local cluster, opened in headless Chromium as a
// person would open it: the page must render (its size, the timeline's and throughput's
// blue, the quicklook) with no error page, and its text must name the job and its ranks.
#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>

#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"
#include "support/known_squares.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::scratch;

constexpr int kPageWidth = 1100;
constexpr int kPageHeight = 1600;

std::string chromium() {
  const auto found = run_command({"sh", "-c", "command -v chromium || command -v chromium-browser"});
  return found.exit_code == 0 ? found.out.substr(0, found.out.find('\n')) : "";
}

struct Pixels {
  int width = 0;
  int height = 0;
  std::size_t timeline_blue = 0;  // #2563eb, the bars' colour
  std::size_t not_white = 0;
};

Pixels read_screenshot(const fs::path& png) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(png.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  Pixels pixels;
  if (!dataset || dataset->GetRasterCount() < 3) return pixels;
  pixels.width = dataset->GetRasterXSize();
  pixels.height = dataset->GetRasterYSize();
  const auto count = static_cast<std::size_t>(pixels.width) * static_cast<std::size_t>(pixels.height);
  std::array<std::vector<std::uint8_t>, 3> bands;
  for (int b = 0; b < 3; ++b) {
    bands[b].resize(count);
    if (dataset->GetRasterBand(b + 1)->RasterIO(GF_Read, 0, 0, pixels.width, pixels.height, bands[b].data(),
                                                pixels.width, pixels.height, GDT_Byte, 0, 0) != CE_None) {
      return {};
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (bands[0][i] == 0x25 && bands[1][i] == 0x63 && bands[2][i] == 0xeb) ++pixels.timeline_blue;
    if (bands[0][i] < 250 || bands[1][i] < 250 || bands[2][i] < 250) ++pixels.not_white;
  }
  return pixels;
}

TEST(JobReportPage, ARealJobsPageRendersInHeadlessChromium) {
  if (std::string(MGPR_TEST_IMAGE).empty() || std::string(MGPR_TEST_MODEL).empty()) {
    GTEST_SKIP() << "needs mgpr-test-image and mgpr-test-model (a build with GDAL and LibTorch)";
  }
  const auto browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium here (scripts/install-deps installs Debian's chromium)";
  const auto dir = scratch("report-page");
  const auto image = dir / "squares.tif";
  std::vector<std::string> make_image{MGPR_TEST_IMAGE, image.string(), "--width", "512", "--height", "384"};
  for (const auto& square : mgpr::test::kKnownSquares) make_image.insert(make_image.end(), {"--square", square});
  ASSERT_EQ(run_command(make_image).exit_code, 0);
  // Slowed so each rank's loop lasts seconds and its timeline has several points.
  const auto model = dir / "detector.pt";
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "detector", model.string(), "--slow", "600"}).exit_code, 0);
  const auto logs = dir / "logs";
  const auto submitted =
      run_command({MGPR_SUBMIT, "--gpus", "a100:2", "--wait", "--log-dir", logs.string(), image.string(), "task=detect",
                   "model=" + model.string(), "tile_size=64", "batch_size=2", "threads=1", "quicklook=true",
                   "output_dir=" + (dir / "out").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const auto job = mgpr::test::job_id_of(submitted);

  const auto written = run_command({MGPR_LOGS, "--log-dir", logs.string(), job, "--html"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const auto page = mgpr::JobLogLayout{logs, job}.job_dir() / "report.html";
  EXPECT_TRUE(contains(written.out, "wrote " + page.string())) << written.out;
  ASSERT_TRUE(fs::exists(page));

  const auto shot = dir / "report.png";
  const std::vector<std::string> headless{
      "timeout",
      "120",
      browser,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--hide-scrollbars",
      "--user-data-dir=" + (dir / "profile").string(),
      "--window-size=" + std::to_string(kPageWidth) + "," + std::to_string(kPageHeight)};
  auto screenshot = headless;
  screenshot.insert(screenshot.end(), {"--screenshot=" + shot.string(), "file://" + page.string()});
  const auto taken = run_command(screenshot);
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  const auto pixels = read_screenshot(shot);
  EXPECT_EQ(pixels.width, kPageWidth);
  EXPECT_EQ(pixels.height, kPageHeight);
  // Bars of two ranks' timelines and the throughput bar: thousands of pixels of their blue.
  EXPECT_GT(pixels.timeline_blue, 2000U) << "the timeline was not drawn";
  EXPECT_GT(pixels.not_white, static_cast<std::size_t>(kPageWidth) * kPageHeight / 20) << "a blank page";

  auto dump = headless;
  dump.insert(dump.end(), {"--dump-dom", "file://" + page.string()});
  const auto dom = run_command(dump);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  for (const auto& text : {"mgpr job " + job, std::string("finished"), std::string("COMPLETED"),
                           std::string("rank 0 · "), std::string("rank 1 · "), std::string("Quicklook"),
                           std::string("data:image/png;base64,"), std::string("class=\"end-ok\"")}) {
    EXPECT_TRUE(contains(dom.out, text)) << text;
  }
  for (const char* error_page : {"ERR_", "neterror", "This site can", "<script"}) {
    EXPECT_FALSE(contains(dom.out, error_page)) << error_page;
  }
}

TEST(JobReportPage, WhatCannotBeWrittenIsRefusedByName) {
  const auto logs = scratch("report-refusals");
  const auto none = run_command({MGPR_LOGS, "--log-dir", logs.string(), "--html"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.err, "--html needs the job id(s)")) << none.err;
  const auto two = run_command({MGPR_LOGS, "--log-dir", logs.string(), "--html", "-o", "x.html", "1", "2"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_TRUE(contains(two.err, "--output names the page of one job")) << two.err;
  const auto unknown = run_command({MGPR_LOGS, "--log-dir", logs.string(), "--no-slurm", "--html", "987654"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(contains(unknown.err, "job 987654: no logs under")) << unknown.err;
  EXPECT_TRUE(fs::is_empty(logs)) << "nothing written for a job that has no logs";
}

}  // namespace
