// File names that break naive job scripts, submitted for real: the job must receive
// each byte for byte, and nothing in a name may run as a command.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/log_layout.hpp"
#include "mgpr/process.hpp"
#include "slurm/test_support.hpp"

namespace {

using mgpr::run_command;
using mgpr::test::contains;
using mgpr::test::scratch;
namespace fs = std::filesystem;

// Each would break a script that pastes names unquoted or in double quotes, or a
// command line that reads them as options.
const std::vector<std::string> kHostileNames{
    "with  two spaces.tif", "it's.tif",      "say \"hi\".tif",    "$(touch pwned).tif",
    "`touch pwned`.tif",    "new\nline.tif", "-leading-dash.tif", "back\\slash $HOME ;|&.tif",
};

// Every file named `pwned` under `dir`: a name that ran as a command leaves one.
std::vector<fs::path> pwned_files(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == "pwned") found.push_back(it->path());
  }
  return found;
}

TEST(HostileNames, ReachTheJobByteForByte) {
  if (std::string(MGPR_TEST_IMAGE).empty()) GTEST_SKIP() << "built without GDAL: no mgpr-test-image to make rasters";
  const auto dir = scratch("hostile");
  const auto logs = dir / "logs";
  std::vector<std::string> expected;
  for (std::size_t i = 0; i < kHostileNames.size(); ++i) {
    // Made under a plain name and renamed: the hostile name goes only through mgpr-submit.
    const auto plain = dir / ("plain-" + std::to_string(i) + ".tif");
    const auto made = run_command({MGPR_TEST_IMAGE, plain.string(), "--size", "64"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    fs::rename(plain, dir / kHostileNames[i]);
    expected.push_back((dir / kHostileNames[i]).string());
  }

  // Relative names after `--`, from the rasters' folder: the leading dash stays a dash
  // on mgpr-submit's command line, and the job's working folder is where `pwned` would
  // appear.
  std::vector<std::string> argv{
      "env",          "-C",     dir.string(), MGPR_SUBMIT,   "--gpus",
      "a100:2",       "--wait", "--log-dir",  logs.string(), "output_dir=" + (dir / "out").string(),
      "tile_size=64", "--"};
  argv.insert(argv.end(), kHostileNames.begin(), kHostileNames.end());
  const auto result = run_command(argv);
  // Success means both ranks opened every raster with GDAL: the runtime exits 2 on one
  // it cannot open, and that code would come back through --wait.
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string job_id = mgpr::test::job_id_of(result);
  const mgpr::JobLogLayout layout{logs, job_id};

  mgpr::RunConfig received;
  mgpr::apply_toml_text(received, mgpr::read_text_file(layout.resolved_config()), layout.resolved_config().string());
  EXPECT_EQ(received.image_path, expected);
  const auto out = mgpr::read_text_file(layout.stdout_log());
  for (const auto& path : expected) {
    EXPECT_TRUE(contains(out, "raster " + path + ": 64x64 px")) << "the runtime did not report " << path << "\n" << out;
  }
  EXPECT_EQ(mgpr::list_rank_summaries(layout).size(), 2U);
  EXPECT_EQ(pwned_files(dir), std::vector<fs::path>{});
  EXPECT_EQ(pwned_files(fs::current_path()), std::vector<fs::path>{});
  EXPECT_EQ(pwned_files(MGPR_TEST_CLUSTER_DIR), std::vector<fs::path>{});

  const auto table = run_command({MGPR_LOGS, "--log-dir", logs.string(), job_id});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "total: 2 rank(s)")) << table.out;
}

}  // namespace
