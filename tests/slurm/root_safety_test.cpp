// The plugin runs as root in slurmstepd, and the job names the
// folders it writes in (MGPR_LOG_DIR, the submit folder). An unprivileged job user
// tries to make it append to, create in and delete from places only root may touch;
// every attempt must fail, and what the plugin does write belongs to the user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slurm/test_support.hpp"

namespace {

using mgpr::CommandResult;
using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::read_file;
using mgpr::test::scratch;
namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

void write_file(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

// A folder of root's that the job user can neither read nor enter.
fs::path root_only(const fs::path& dir) {
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  return dir;
}

// A folder the job user owns, as their own log folder would be.
fs::path users_own(const fs::path& dir) {
  fs::create_directories(dir);
  if (::chown(dir.c_str(), kNobody, kNogroup) != 0) throw std::runtime_error("chown " + dir.string());
  return dir;
}

// srun as the unprivileged user `nobody`, in a folder of theirs, two ranks on two GPUs.
CommandResult srun_as_nobody(const fs::path& work_dir, const fs::path& log_dir, const std::string& script) {
  return run_command({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "srun",
                      "--chdir=" + work_dir.string(), "--export=ALL,MGPR_LOG_DIR=" + log_dir.string(), "--mgpr", "-n2",
                      "--gpus=a100:2", "bash", "-c", script});
}

class RootSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a job as another user (CI runs as root)";
    base_ = scratch("root-safety-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ::chmod(base_.c_str(), 0755);
    work_ = users_own(base_ / "work");
    vault_ = root_only(base_ / "vault");
  }
  fs::path base_, work_, vault_;
};

constexpr const char* kRankOneFails = "if [ $RANK = 1 ]; then exit 1; fi; sleep 600";

// The watchdog's diagnosis is written from slurmstepd's own thread, as root.
TEST_F(RootSafety, ADiagnosisNeverFollowsTheUsersSymlinkIntoARootFile) {
  const auto secret = vault_ / "secret";
  write_file(secret, "root's\n");
  const auto logs = users_own(work_ / "logs");
  fs::create_symlink(secret, logs / "diagnoses.log");
  const auto run = srun_as_nobody(work_, logs, kRankOneFails);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_TRUE(contains(run.err, "exited with code 1")) << run.err << "\nthe finding still reaches srun";
  EXPECT_EQ(read_file(secret), "root's\n") << "the plugin appended to a root-only file through the user's symlink";
}

TEST_F(RootSafety, NoFolderIsCreatedWhereTheUserCouldNotCreateOne) {
  const auto target = vault_ / "made-by-the-plugin";
  const auto run = srun_as_nobody(work_, target, kRankOneFails);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_FALSE(fs::exists(target)) << "the plugin created a folder in a root-only folder for the user";
  EXPECT_TRUE(contains(run.err, "could not record the diagnosis")) << run.err;
}

// The ranks swap `progress` for a link to root's folder while the step runs; the
// plugin's clean-up at the step's end then must not delete root's files through it.
TEST_F(RootSafety, TheProgressCleanUpDeletesNothingThroughASwappedLink) {
  const auto victim = root_only(vault_ / "victim");
  fs::create_directories(victim / "0");
  write_file(victim / "0" / "rank-00000", "keep\n");
  write_file(victim / "0" / "rank-00001", "keep\n");
  const auto logs = users_own(work_ / "logs");
  const auto swap = "touch \"$MGPR_PROGRESS_FILE\"; sleep 1; if [ $RANK = 0 ]; then mv " +
                    (logs / "progress").string() + " " + (logs / "moved").string() + " && ln -s " + victim.string() +
                    " " + (logs / "progress").string() + "; fi; sleep 2";
  const auto run = srun_as_nobody(work_, logs, swap);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::exists(victim / "0" / "rank-00000")) << "root's file was deleted through the user's link";
  EXPECT_TRUE(fs::exists(victim / "0" / "rank-00001")) << "root's file was deleted through the user's link";
  EXPECT_TRUE(fs::exists(victim / "0")) << "root's folder was removed through the user's link";
}

TEST_F(RootSafety, WhatThePluginWritesBelongsToTheJobUser) {
  const auto logs = work_ / "new" / "logs";  // missing: made for the user
  const auto run = srun_as_nobody(work_, logs, kRankOneFails);
  EXPECT_NE(run.exit_code, 0);
  struct stat file {};
  ASSERT_EQ(::stat((logs / "diagnoses.log").c_str(), &file), 0) << run.err;
  EXPECT_EQ(file.st_uid, kNobody);
  EXPECT_TRUE(contains(read_file(logs / "diagnoses.log"), "exited with code 1"));
  struct stat folder {};
  ASSERT_EQ(::stat((work_ / "new").c_str(), &folder), 0);
  EXPECT_EQ(folder.st_uid, kNobody) << "a folder made for the job belongs to root";
}

}  // namespace
