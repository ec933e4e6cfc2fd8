// The temporary files of outputs: named for this host and process, and removed by the
// next run only when their writer is a process of this host that no longer runs.
#include "writers/partial_names.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "mgpr/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace output = mgpr::runtime::output;

// A process number that ran on this host and no longer does: a child that has exited.
pid_t dead_process() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

fs::path touch(const fs::path& file) {
  std::ofstream(file) << "half\n";
  return file;
}

TEST(PartialNames, ATemporaryNameIsHiddenBesideItsTargetWithHostProcessAndExtension) {
  const auto name = output::partial_path("/out/field_detections.gpkg");
  EXPECT_EQ(name.parent_path(), fs::path("/out"));
  EXPECT_EQ(name.filename().string(),
            ".field_detections.gpkg.partial-" + mgpr::host_name("host") + "-" + std::to_string(::getpid()) + ".gpkg");
}

TEST(PartialNames, OnlyWhatADeadProcessOfThisHostLeftIsRemoved) {
  mgpr::test::TempDir dir;
  const auto folder = dir.path();
  const auto host = mgpr::host_name("host");
  const auto dead = std::to_string(dead_process());
  const auto stale = touch(folder / (".a_detections.gpkg.partial-" + host + "-" + dead + ".gpkg"));
  const auto stale_sidecar = touch(folder / (".a_detections.shp.partial-" + host + "-" + dead + ".dbf"));
  const auto stale_table = touch(folder / (".a_detections.csv.partial-" + host + "-" + dead + ".csv"));
  const std::vector<fs::path> kept{
      touch(output::partial_path(folder / "b_detections.gpkg")),                      // this process's
      touch(folder / (".c_detections.gpkg.partial-another-host-" + dead + ".gpkg")),  // another host's
      touch(folder / "a_detections.gpkg"),                                            // a complete file
      touch(folder / (".d.partial-" + host + "-notanumber.csv")),                     // not a writer's
  };
  // A link named like a stale file is neither followed nor removed, nor what it points to.
  const auto target = touch(folder / "precious.txt");
  fs::create_symlink(target, folder / (".e.tif.partial-" + host + "-" + dead + ".tif"));
  // A dataset written as a folder (GeoParquet's) by a dead process goes with all it holds;
  // a live one's stays.
  const auto stale_dataset = folder / (".f.parquet.partial-" + host + "-" + dead + ".parquet");
  fs::create_directory(stale_dataset);
  touch(stale_dataset / "detections-0000.parquet");
  const auto live_dataset = output::partial_path(folder / "g.parquet");
  fs::create_directory(live_dataset);

  auto removed = output::remove_stale_partials(folder);
  std::sort(removed.begin(), removed.end());
  std::vector<fs::path> expected{stale, stale_sidecar, stale_table, stale_dataset};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  for (const auto& file : expected) EXPECT_FALSE(fs::exists(file)) << file;
  for (const auto& file : kept) EXPECT_TRUE(fs::exists(file)) << file;
  EXPECT_TRUE(fs::is_symlink(folder / (".e.tif.partial-" + host + "-" + dead + ".tif")));
  EXPECT_TRUE(fs::exists(target));
  EXPECT_TRUE(fs::is_directory(live_dataset));
  EXPECT_TRUE(output::remove_stale_partials(folder / "missing").empty());
}

}  // namespace
