#include "distributed/heartbeat.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "mgpr/log_layout.hpp"
#include "support/process.hpp"

namespace mgpr::runtime {
namespace {

using test::read_text;
using test::TempDir;
namespace fs = std::filesystem;

timespec mtime_of(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mtim;
}

bool later(const timespec& a, const timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

TEST(Heartbeat, ArrivedCreatesTheFileAndProgressAdvancesItsTime) {
  const TempDir dir;
  const auto file = dir.path() / "rank-00000";
  Heartbeat report(file.string());
  ASSERT_TRUE(report.active());
  report.arrived();
  ASSERT_TRUE(fs::exists(file));
  const auto arrived_at = mtime_of(file);

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  report.progress();
  const auto touched_at = mtime_of(file);
  EXPECT_TRUE(later(touched_at, arrived_at));

  // At most once per second: an immediate second report leaves the time alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  report.progress();
  const auto again = mtime_of(file);
  EXPECT_EQ(again.tv_sec, touched_at.tv_sec);
  EXPECT_EQ(again.tv_nsec, touched_at.tv_nsec);
}

TEST(Heartbeat, FinishedSaysSoInTheFileAndANewArrivalClearsIt) {
  const TempDir dir;
  const auto file = dir.path() / "rank-00000";
  Heartbeat report(file.string());
  report.finished();
  EXPECT_FALSE(fs::exists(file)) << "finishing without arriving claims nothing";
  report.arrived();
  report.finished();
  EXPECT_EQ(read_text(file), std::string(mgpr::kProgressFinished));
  report.arrived();
  EXPECT_EQ(read_text(file), "");
}

TEST(Heartbeat, ManyThreadsReportingIsSafe) {
  const TempDir dir;
  const auto file = dir.path() / "rank-00001";
  Heartbeat report(file.string(), std::chrono::milliseconds(0));
  report.arrived();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&report] {
      for (int i = 0; i < 200; ++i) report.progress();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_TRUE(fs::exists(file));
}

TEST(Heartbeat, ProgressDoesNotClaimAnArrival) {
  const TempDir dir;
  const auto file = dir.path() / "rank-00002";
  Heartbeat report(file.string());
  report.progress();
  EXPECT_FALSE(fs::exists(file));
}

TEST(Heartbeat, FailuresAreIgnored) {
  Heartbeat report("/nonexistent-mgpr-folder/progress/0/rank-00000");
  report.arrived();
  report.progress();
  EXPECT_FALSE(fs::exists("/nonexistent-mgpr-folder"));
}

TEST(Heartbeat, ReadsItsPathFromTheEnvironment) {
  const TempDir dir;
  const auto file = dir.path() / "rank-00003";
  ::setenv("MGPR_PROGRESS_FILE", file.c_str(), 1);
  auto report = Heartbeat::from_environment();
  ::unsetenv("MGPR_PROGRESS_FILE");
  EXPECT_EQ(report.path(), file.string());
  report.arrived();
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(Heartbeat::from_environment().active());
}

}  // namespace
}  // namespace mgpr::runtime
