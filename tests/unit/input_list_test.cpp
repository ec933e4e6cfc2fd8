// The input forms of mgpr and mgpr-submit (mgpr/input_list.hpp), on real folders.
#include "mgpr/input_list.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

namespace mgpr {
namespace {
namespace fs = std::filesystem;
using test::error_of;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::Not;

void touch(const fs::path& file) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "x";
}

std::vector<std::string> expand(std::vector<std::string> inputs, InputRules rules = {}) {
  return expand_inputs(inputs, rules);
}

TEST(InputList, RemoteFormsBecomeGdalPaths) {
  EXPECT_EQ(gdal_path_of("s3://bucket/ortho/a.tif"), "/vsis3/bucket/ortho/a.tif");
  EXPECT_EQ(gdal_path_of("gs://bucket/a.tif"), "/vsigs/bucket/a.tif");
  EXPECT_EQ(gdal_path_of("https://host/a.tif"), "/vsicurl/https://host/a.tif");
  EXPECT_EQ(gdal_path_of("http://127.0.0.1:8080/a.tif"), "/vsicurl/http://127.0.0.1:8080/a.tif");
  EXPECT_EQ(gdal_path_of("/vsis3/bucket/a.tif"), "/vsis3/bucket/a.tif");
  EXPECT_EQ(gdal_path_of("tiles/a.tif"), "tiles/a.tif");
  EXPECT_TRUE(is_remote_input("/vsicurl/https://host/a.tif"));
  EXPECT_TRUE(is_remote_input("s3://b/k"));
  EXPECT_FALSE(is_remote_input("s3_tiles/a.tif"));
  EXPECT_FALSE(is_remote_input("/data/a.tif"));
  // Remote inputs pass expansion as GDAL paths, untouched otherwise (no listing).
  EXPECT_THAT(expand({"s3://bucket/*.tif"}), ElementsAre("/vsis3/bucket/*.tif"));
}

TEST(InputList, SecretsInUrlsAreNotShown) {
  EXPECT_EQ(redact_input("/vsicurl/https://host/a.tif?X-Amz-Signature=abc&X-Amz-Credential=key"),
            "/vsicurl/https://host/a.tif?…");
  EXPECT_EQ(redact_input("https://user:secret@host/a.tif"), "https://host/a.tif");
  EXPECT_EQ(redact_input("/data/a.tif"), "/data/a.tif");
}

TEST(InputList, VsiPathsAreNeverListedNorNormalisedAndListsAnchorTheirLocalPart) {
  const test::TempDir dir;
  // "//" belongs to a chain's name: a path's normalisation would fold it.
  EXPECT_THAT(expand({"/vsicurl_streaming/https://h/x.tif", "/vsizip//vsis3/b/x.zip/y.tif", "/vsizip/a.zip/x.tif"}),
              ElementsAre("/vsicurl_streaming/https://h/x.tif", "/vsizip//vsis3/b/x.zip/y.tif", "/vsizip/a.zip/x.tif"));
  EXPECT_TRUE(is_remote_input("/vsizip//vsis3/b/x.zip/y.tif"));
  EXPECT_TRUE(is_remote_input("/vsicurl_streaming/https://h/x.tif"));
  EXPECT_FALSE(is_remote_input("/vsizip/a.zip/x.tif"));
  // In a list, a relative archive is the list folder's, as a relative path is.
  std::ofstream(dir.file("list.txt")) << "/vsizip/a.zip/x.tif\n/vsizip/{b}/y.tif\n/vsigzip//data/c.tif.gz\n";
  EXPECT_THAT(expand({"@" + dir.file("list.txt")}),
              ElementsAre("/vsizip/" + dir.file("a.zip") + "/x.tif", "/vsizip/{" + dir.file("b") + "}/y.tif",
                          "/vsigzip//data/c.tif.gz"));
}

TEST(InputList, UrlsOfOtherSchemesAndWriteOnlyPathsAreRefusedWithTheFix) {
  EXPECT_THAT(error_of([] { expand({"az://container/a.tif"}); }),
              HasSubstr("input 'az://container/a.tif' is a URL mgpr does not read"));
  EXPECT_THAT(error_of([] { expand({"az://container/a.tif"}); }), HasSubstr("/vsiaz/container/blob"));
  EXPECT_THAT(error_of([] { expand({"/vsistdout/"}); }), HasSubstr("names /vsistdout/, which GDAL can only write"));
}

TEST(InputList, ACryptKeyIsNotShown) {
  EXPECT_EQ(redact_input("/vsicrypt/key=s3cr3t,file=/data/a.tif"), "/vsicrypt/key=***,file=/data/a.tif");
  EXPECT_EQ(redact_input("/vsicrypt/alg=AES,key_b64=czNjcjN0,file=a.tif"), "/vsicrypt/alg=AES,key_b64=***,file=a.tif");
  EXPECT_EQ(redact_input("/vsicached?file=/data/a.tif"), "/vsicached?file=/data/a.tif");
}

TEST(InputList, AFolderGivesItsRastersSortedAndSkipsSidecars) {
  const test::TempDir dir;
  for (const auto* name : {"b.tif", "a.TIF", "c.tiff", "a.tif.aux.xml", "a.tif.ovr", "notes.txt", "sub/d.tif"}) {
    touch(dir.path() / name);
  }
  const auto folder = dir.path().string();
  EXPECT_THAT(expand({folder}), ElementsAre(dir.file("a.TIF"), dir.file("b.tif"), dir.file("c.tiff")));
  EXPECT_THAT(expand({folder}, {"*.tif", false}), ElementsAre(dir.file("b.tif")));
  EXPECT_THAT(expand({folder}, {"*.tif", true}), ElementsAre(dir.file("b.tif"), dir.file("sub/d.tif")));
}

TEST(InputList, AnEmptyFolderIsRefusedWithTheFix) {
  const test::TempDir dir;
  touch(dir.path() / "sub" / "a.tif");
  const auto message = error_of([&] { expand({dir.path().string()}); });
  EXPECT_THAT(message, HasSubstr(dir.path().string()));
  EXPECT_THAT(message, HasSubstr("recursive=true"));
  EXPECT_THAT(error_of([&] { expand({dir.path().string()}, {"*.jp2", true}); }), HasSubstr("image_glob='*.jp2'"));
}

TEST(InputList, AListFileNamesRastersRelativeToItself) {
  const test::TempDir dir;
  touch(dir.path() / "tiles" / "a.tif");
  touch(dir.path() / "tiles" / "b.tif");
  std::ofstream(dir.file("list.txt")) << "# NEON tiles\n"
                                         "tiles/a.tif\r\n"
                                         "\n"
                                         "  s3://bucket/x.tif  \n"
                                         "tiles/a.tif\n"
                                         "tiles\n";
  EXPECT_THAT(expand({"@" + dir.file("list.txt")}),
              ElementsAre(dir.file("tiles/a.tif"), "/vsis3/bucket/x.tif", dir.file("tiles/b.tif")));
}

TEST(InputList, BadListsAreNamed) {
  const test::TempDir dir;
  EXPECT_THAT(error_of([&] { expand({"@" + dir.file("missing.txt")}); }),
              HasSubstr("input list '@" + dir.file("missing.txt") + "' cannot be read"));
  std::ofstream(dir.file("empty.txt")) << "# nothing\n\n";
  EXPECT_THAT(error_of([&] { expand({"@" + dir.file("empty.txt")}); }), HasSubstr("names no raster"));
  std::ofstream(dir.file("nested.txt")) << "@other.txt\n";
  EXPECT_THAT(error_of([&] { expand({"@" + dir.file("nested.txt")}); }), HasSubstr("line 1 names another list"));
}

TEST(InputList, QuotedGlobsAreExpandedAndAnExistingNameIsTakenAsIs) {
  const test::TempDir dir;
  touch(dir.path() / "t_1.tif");
  touch(dir.path() / "t_2.tif");
  touch(dir.path() / "odd[1].tif");
  EXPECT_THAT(expand({dir.file("t_*.tif")}), ElementsAre(dir.file("t_1.tif"), dir.file("t_2.tif")));
  EXPECT_THAT(expand({dir.file("odd[1].tif")}), ElementsAre(dir.file("odd[1].tif")));
  const auto message = error_of([&] { expand({dir.file("x_*.tif")}); });
  EXPECT_THAT(message, HasSubstr(dir.file("x_*.tif")));
  EXPECT_THAT(message, HasSubstr("matches no file"));
}

TEST(InputList, EachRasterOnceInTheOrderFirstNamed) {
  const test::TempDir dir;
  touch(dir.path() / "a.tif");
  touch(dir.path() / "b.tif");
  EXPECT_THAT(expand({dir.file("b.tif"), dir.path().string(), dir.file("./a.tif")}),
              ElementsAre(dir.file("b.tif"), dir.file("a.tif")));
  // A file that does not exist stays, for the reader to name with its fix.
  EXPECT_THAT(expand({dir.file("missing.tif")}), ElementsAre(dir.file("missing.tif")));
  EXPECT_THAT(expand({dir.file("missing.tif")}), Not(ElementsAre()));
}

}  // namespace
}  // namespace mgpr
