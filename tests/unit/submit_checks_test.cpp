// mgpr-submit's checks of the inputs on the login node: the same expansion as the
// runtime's, local rasters checked, remote ones counted and explained, never opened.
#include "submit_checks.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

namespace mgpr::launcher {
namespace {
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

RunConfig config_with(std::vector<std::string> inputs, const test::TempDir& dir) {
  RunConfig config;
  config.image_path = std::move(inputs);
  config.output_dir = dir.file("out");
  return config;
}

TEST(SubmitChecks, AFolderOfTilesAListAndRemoteRastersAreCheckedAsTheJobWillReadThem) {
  const test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "tiles");
  for (const auto* name : {"a.tif", "b.tif", "c.tif"}) std::ofstream(dir.path() / "tiles" / name) << "x";
  std::ofstream(dir.file("list.txt")) << "tiles/a.tif\nhttps://example.org/ortho.tif\n";
  const auto checked =
      check_inputs(config_with({dir.file("tiles"), "@" + dir.file("list.txt"), "s3://bucket/o.tif"}, dir));
  EXPECT_EQ(checked.local, 3) << "a.tif twice is one raster";
  EXPECT_EQ(checked.remote,
            (std::vector<std::string>{"/vsicurl/https://example.org/ortho.tif", "/vsis3/bucket/o.tif"}));
}

TEST(SubmitChecks, AFolderWithoutRastersAndAnUnreadableRasterAreNamed) {
  const test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "empty");
  EXPECT_THAT(test::error_of([&] { check_inputs(config_with({dir.file("empty")}, dir)); }),
              HasSubstr("input folder '" + dir.file("empty") + "' holds no rasters"));
  EXPECT_THAT(test::error_of([&] { check_inputs(config_with({dir.file("gone.tif")}, dir)); }),
              HasSubstr("raster '" + dir.file("gone.tif") + "' does not exist"));
}

TEST(SubmitChecks, VsiPathsAreCheckedByTheLocalFileTheyReadAndChainsOverTheNetworkCountAsRemote) {
  const test::TempDir dir;
  std::ofstream(dir.file("tiles.zip")) << "x";
  const auto checked =
      check_inputs(config_with({"/vsizip/" + dir.file("tiles.zip") + "/a.tif", "/vsizip//vsis3/bucket/tiles.zip/a.tif",
                                "/vsicurl_streaming/https://host/a.tif", "NETCDF:\"a.nc\":var"},
                               dir));
  EXPECT_EQ(checked.local, 1) << "the archive is checked, the member is the job's to find";
  EXPECT_EQ(checked.remote, (std::vector<std::string>{"/vsizip//vsis3/bucket/tiles.zip/a.tif",
                                                      "/vsicurl_streaming/https://host/a.tif"}));
  EXPECT_EQ(checked.unchecked, (std::vector<std::string>{"NETCDF:\"a.nc\":var"}));
  EXPECT_THAT(unchecked_input_notes(checked.unchecked)[0], HasSubstr("not checked from this node"));
  // An archive inside a chain over S3 still needs AWS's credentials.
  EXPECT_THAT(remote_input_notes(checked.remote, {})[1], HasSubstr("no AWS credentials found"));
}

TEST(SubmitChecks, VsiPathsAJobCouldNeverReadAreRefusedByName) {
  const test::TempDir dir;
  const auto missing = dir.file("gone.zip");
  EXPECT_THAT(test::error_of([&] { check_inputs(config_with({"/vsizip/" + missing + "/a.tif"}, dir)); }),
              HasSubstr("archive of raster '/vsizip/" + missing + "/a.tif' '" + missing + "' does not exist"));
  EXPECT_THAT(test::error_of([&] { check_inputs(config_with({"/vsimem/a.tif"}, dir)); }),
              HasSubstr("GDAL's in-memory file system"));
  EXPECT_THAT(test::error_of([&] { check_inputs(config_with({"/vsistdin/"}, dir)); }),
              HasSubstr("a batch job does not have"));
  EXPECT_THAT(test::error_of([&] { check_inputs(config_with({"/vsicrypt/key=s3cr3t,file=" + dir.file("a")}, dir)); }),
              AllOf(HasSubstr("carries credentials"), Not(HasSubstr("s3cr3t"))));
}

TEST(SubmitChecks, RemoteRastersAreExplainedWithTheMissingCredentialsAndNoSecret) {
  const std::vector<std::string> remote{"/vsis3/bucket/a.tif", "/vsicurl/https://host/b.tif?X-Amz-Signature=s3cr3t"};
  const auto without = remote_input_notes(remote, {});
  ASSERT_EQ(without.size(), 2U);
  EXPECT_THAT(without[0], HasSubstr("2 remote raster(s)"));
  EXPECT_THAT(without[1], HasSubstr("no AWS credentials found"));
  const auto with = remote_input_notes(remote, {true, true});
  ASSERT_EQ(with.size(), 1U);
  const std::vector<std::string> signed_url{remote[1]};
  EXPECT_THAT(remote_input_notes(signed_url, {})[0], Not(HasSubstr("s3cr3t")));
  EXPECT_TRUE(remote_input_notes({}, {}).empty());
}

TEST(SubmitChecks, AUrlWithCredentialsIsRefusedOnTheCommandLineAndTakenFromAListFile) {
  const test::TempDir dir;
  const std::string presigned = "https://bucket.example.org/o.tif?X-Amz-Credential=AKIA&X-Amz-Signature=s3cr3t";
  for (const auto& input : {presigned, std::string("https://user:pa55@example.org/o.tif")}) {
    const auto refused = test::error_of([&] { check_inputs(config_with({input}, dir)); });
    EXPECT_THAT(refused, HasSubstr("carries credentials (a URL's query string")) << input;
    EXPECT_THAT(refused, HasSubstr("@urls.txt")) << input;
    EXPECT_THAT(refused, Not(HasSubstr("s3cr3t")));
    EXPECT_THAT(refused, Not(HasSubstr("pa55")));
  }
  // In a list file the URL stays in the user's file; the job script names the file.
  std::ofstream(dir.file("urls.txt")) << presigned << "\n";
  const auto checked = check_inputs(config_with({"@" + dir.file("urls.txt")}, dir));
  EXPECT_EQ(checked.remote.size(), 1U);
  // A URL without credentials is passed as it is.
  EXPECT_EQ(check_inputs(config_with({"https://example.org/o.tif"}, dir)).remote.size(), 1U);
}

}  // namespace
}  // namespace mgpr::launcher
