#include "mgpr/log_layout.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

class TempDir : public ::testing::Test {
 protected:
  mgpr::test::TempDir scratch_{"mgpr-layout-"};
  fs::path root_ = scratch_.path();
};

TEST(LogLayout, Paths) {
  const mgpr::JobLogLayout layout{"slurm_logs", "1234"};
  EXPECT_EQ(layout.job_dir(), fs::path("slurm_logs/1234"));
  EXPECT_EQ(layout.stdout_log(), fs::path("slurm_logs/1234.out"));
  EXPECT_EQ(layout.stderr_log(), fs::path("slurm_logs/1234.err"));
  EXPECT_EQ(layout.rank_summary(7), fs::path("slurm_logs/1234/rank-00007.json"));
  EXPECT_EQ(layout.resolved_config(), fs::path("slurm_logs/1234/config.toml"));
}

TEST(LogLayout, JobIds) {
  EXPECT_TRUE(mgpr::is_job_id("42"));
  EXPECT_TRUE(mgpr::is_job_id("42_3"));
  EXPECT_FALSE(mgpr::is_job_id("42_"));
  EXPECT_FALSE(mgpr::is_job_id("abc"));
  EXPECT_FALSE(mgpr::is_job_id(""));
}

TEST_F(TempDir, ListsJobsNumerically) {
  fs::create_directories(root_ / "100");
  fs::create_directories(root_ / "99");
  std::ofstream(root_ / "101.out") << "x";
  std::ofstream(root_ / "100.err") << "x";
  fs::create_directories(root_ / "not-a-job");
  EXPECT_EQ(mgpr::list_job_ids(root_), (std::vector<std::string>{"99", "100", "101"}));
}

TEST_F(TempDir, AtomicWriteLeavesNoTemporary) {
  const auto target = root_ / "file.json";
  mgpr::write_file_atomically(target, "first");
  mgpr::write_file_atomically(target, "second");
  EXPECT_EQ(mgpr::read_text_file(target), "second");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(root_)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(TempDir, AtomicWriteIntoMissingFolderFailsWithName) {
  try {
    mgpr::write_file_atomically(root_ / "missing" / "f.json", "x");
    FAIL() << "expected an error";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("f.json"), std::string::npos);
  }
}

}  // namespace
