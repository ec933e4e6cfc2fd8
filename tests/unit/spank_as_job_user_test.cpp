// The plugin's file operations for a job (as_job_user.hpp): done as the job's user,
// never through a link. Those acting as `nobody` need root, as the plugin has.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "as_job_user.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"
#include "support/text_search.hpp"
#include "unit/job_users.hpp"

namespace {

using namespace mgpr::spank;
using mgpr::test::nobody;
using mgpr::test::this_process_user;
namespace fs = std::filesystem;

using mgpr::test::contains;

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uid_t owner_of(const fs::path& path) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) return static_cast<uid_t>(-1);
  return status.st_uid;
}

class AsJobUser : public ::testing::Test {
 protected:
  void SetUp() override { ::chmod(dir_.path().c_str(), 0755); }
  mgpr::test::TempDir dir_{"mgpr-as-user-"};
};

class AsAnotherUser : public AsJobUser {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another user (CI runs as root)";
    AsJobUser::SetUp();
  }
  // A folder `nobody` owns, and a root-only one holding a root-only file.
  fs::path users_folder() {
    const auto folder = dir_.path() / "users";
    fs::create_directories(folder);
    static_cast<void>(::chown(folder.c_str(), mgpr::test::kNobody, mgpr::test::kNogroup));
    return folder;
  }
  fs::path root_only_file() {
    const auto vault = dir_.path() / "vault";
    fs::create_directories(vault);
    ::chmod(vault.c_str(), 0700);
    std::ofstream(vault / "secret") << "root's\n";
    ::chmod((vault / "secret").c_str(), 0600);
    return vault / "secret";
  }
};

TEST_F(AsJobUser, AppendsMakingTheMissingFolders) {
  const auto logs = dir_.path() / "a" / "b";
  append_file_as(this_process_user(), logs, "diagnoses.log", "one\n");
  append_file_as(this_process_user(), logs, "diagnoses.log", "two\n");
  EXPECT_EQ(read_file(logs / "diagnoses.log"), "one\ntwo\n");
}

TEST_F(AsJobUser, ASymlinkedFileIsRefusedEvenForRoot) {
  const auto target = dir_.path() / "target";
  std::ofstream(target) << "kept\n";
  fs::create_symlink(target, dir_.path() / "diagnoses.log");
  const auto error = mgpr::test::error_of<UserFileError>(
      [&] { append_file_as(this_process_user(), dir_.path(), "diagnoses.log", "x\n"); });
  EXPECT_TRUE(contains(error, "is a symbolic link")) << error;
  EXPECT_TRUE(contains(error, (dir_.path() / "diagnoses.log").string())) << error;
  EXPECT_EQ(read_file(target), "kept\n");
}

TEST_F(AsJobUser, ALinkAnywhereInThePathIsRefusedAndNamed) {
  fs::create_directories(dir_.path() / "real");
  fs::create_directory_symlink(dir_.path() / "real", dir_.path() / "link");
  const auto error = mgpr::test::error_of<UserFileError>(
      [&] { open_folder_as(this_process_user(), dir_.path() / "link" / "sub", true); });
  EXPECT_TRUE(contains(error, "'" + (dir_.path() / "link").string() + "' is a symbolic link")) << error;
  EXPECT_FALSE(fs::exists(dir_.path() / "real" / "sub")) << "nothing is made through the link";
}

TEST_F(AsJobUser, AFifoIsRefusedWithoutWaitingForAReader) {
  ASSERT_EQ(::mkfifo((dir_.path() / "diagnoses.log").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  const auto error = mgpr::test::error_of<UserFileError>(
      [&] { append_file_as(this_process_user(), dir_.path(), "diagnoses.log", "x\n"); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(error, "no error");
}

TEST_F(AsJobUser, ARelativePathAndAPathAsFileNameAreRefused) {
  EXPECT_TRUE(
      contains(mgpr::test::error_of<UserFileError>([&] { open_folder_as(this_process_user(), "relative/logs", true); }),
               "not an absolute path"));
  EXPECT_TRUE(contains(mgpr::test::error_of<UserFileError>(
                           [&] { append_file_as(this_process_user(), dir_.path(), "../escape", "x\n"); }),
                       "is not a file name"));
}

TEST_F(AsJobUser, OpenCountsTheFoldersItMadeAndTidyingStopsAtAFullOne) {
  const auto kept = dir_.path() / "kept";
  fs::create_directories(kept);
  std::ofstream(kept / "file") << "x";
  const auto deep = kept / "x" / "y" / "z";
  const auto opened = open_folder_as(this_process_user(), deep, true);
  EXPECT_EQ(opened.made, 3);
  EXPECT_GE(opened.folder.get(), 0);
  EXPECT_EQ(open_folder_as(this_process_user(), deep, true).made, 0);
  remove_empty_folders_as(this_process_user(), deep, 10);
  EXPECT_FALSE(fs::exists(kept / "x"));
  EXPECT_TRUE(fs::exists(kept / "file")) << "a folder with something in it stays";
}

TEST_F(AsAnotherUser, NothingIsWrittenOrMadeInARootOnlyFolder) {
  const auto secret = root_only_file();
  const auto error =
      mgpr::test::error_of<UserFileError>([&] { append_file_as(nobody(), secret.parent_path(), "secret", "x\n"); });
  EXPECT_TRUE(contains(error, "uid 65534")) << error;
  EXPECT_EQ(read_file(secret), "root's\n");
  const auto made = secret.parent_path() / "made";
  EXPECT_NE(mgpr::test::error_of<UserFileError>([&] { open_folder_as(nobody(), made, true); }), "no error");
  EXPECT_FALSE(fs::exists(made));
}

TEST_F(AsAnotherUser, ALinkToARootFileInTheUsersOwnFolderIsRefused) {
  const auto secret = root_only_file();
  const auto logs = users_folder();
  fs::create_symlink(secret, logs / "diagnoses.log");
  EXPECT_NE(mgpr::test::error_of<UserFileError>([&] { append_file_as(nobody(), logs, "diagnoses.log", "x\n"); }),
            "no error");
  EXPECT_EQ(read_file(secret), "root's\n");
}

TEST_F(AsAnotherUser, WhatIsMadeBelongsToTheUser) {
  const auto logs = users_folder() / "job" / "42";
  append_file_as(nobody(), logs, "diagnoses.log", "x\n");
  EXPECT_EQ(owner_of(logs.parent_path()), mgpr::test::kNobody);
  EXPECT_EQ(owner_of(logs / "diagnoses.log"), mgpr::test::kNobody);
}

// In a sticky folder (as /tmp is) the user may not delete another user's file: nor may
// the plugin on the user's behalf.
TEST_F(AsAnotherUser, RemovingHonoursTheStickyBit) {
  const auto shared = dir_.path() / "shared";
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  std::ofstream(shared / "rank-00000") << "root's";
  const std::vector<std::string> names{"rank-00000"};
  EXPECT_NE(mgpr::test::error_of<UserFileError>([&] { remove_files_as(nobody(), shared, names); }), "no error");
  EXPECT_TRUE(fs::exists(shared / "rank-00000"));
  remove_empty_folders_as(nobody(), shared, 1);
  EXPECT_TRUE(fs::exists(shared));
}

}  // namespace
