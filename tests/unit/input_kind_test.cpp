// The one classification of inputs (mgpr/input_kind.hpp), as a table over every form GDAL's
// virtual file systems page documents, the URL schemes, lists, paths and drivers' syntax.
#include "mgpr/input_kind.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"

namespace mgpr {
namespace {

struct Form {
  std::string input;
  InputKind kind;
  bool remote;
  std::string local_file;                 // empty: none
  std::vector<std::string> file_systems;  // the chain's prefixes, outermost first
};

void PrintTo(const Form& form, std::ostream* out) { *out << form.input; }

class InputForms : public testing::TestWithParam<Form> {};

TEST_P(InputForms, AreClassifiedByTheirSpelling) {
  const auto& form = GetParam();
  const auto classified = classify_input(form.input);
  EXPECT_EQ(classified.kind, form.kind);
  EXPECT_EQ(classified.remote, form.remote);
  EXPECT_EQ(std::string(local_file_of(form.input, classified)), form.local_file);
  std::vector<std::string> prefixes;
  for (const auto& layer : classified.layers) {
    prefixes.push_back(layer.prefix);
    EXPECT_LE(layer.at + layer.size, form.input.size()) << layer.prefix;
  }
  EXPECT_EQ(prefixes, form.file_systems);
}

using enum InputKind;

INSTANTIATE_TEST_SUITE_P(
    Table, InputForms,
    testing::Values(
        // Paths on this machine, lists, URLs, drivers' syntax.
        Form{"ortho.tif", kLocalPath, false, "ortho.tif", {}},
        Form{"/data/tiles/", kLocalPath, false, "/data/tiles/", {}},
        Form{"survey/*/ortho_*.tif", kLocalPath, false, "survey/*/ortho_*.tif", {}},
        Form{"/data/2024-01-01T10:00/a.tif", kLocalPath, false, "/data/2024-01-01T10:00/a.tif", {}},
        Form{"s3_tiles/a.tif", kLocalPath, false, "s3_tiles/a.tif", {}},
        Form{"@tiles.txt", kListFile, false, "tiles.txt", {}}, Form{"https://host/a.tif", kUrl, true, "", {}},
        Form{"http://127.0.0.1:8080/a.tif", kUrl, true, "", {}}, Form{"s3://bucket/a.tif", kUrl, true, "", {}},
        Form{"gs://bucket/a.tif", kUrl, true, "", {}}, Form{"az://container/a.tif", kOtherUrl, false, "", {}},
        Form{"ftp://host/a.tif", kOtherUrl, false, "", {}},
        Form{"NETCDF:\"a.nc\":temperature", kDriverPath, false, "", {}},
        Form{"GTIFF_DIR:2:a.tif", kDriverPath, false, "", {}},
        Form{"HDF5:a.h5://group/data", kDriverPath, false, "", {}},
        // Network file systems, random access and streaming.
        Form{"/vsicurl/https://host/a.tif", kVsiPath, true, "", {"/vsicurl"}},
        Form{"/vsicurl?url=https%3A%2F%2Fhost%2Fa.tif&use_head=no", kVsiPath, true, "", {"/vsicurl"}},
        Form{"/vsicurl_streaming/https://host/a.tif", kVsiPath, true, "", {"/vsicurl_streaming"}},
        Form{"/vsis3/bucket/a.tif", kVsiPath, true, "", {"/vsis3"}},
        Form{"/vsis3_streaming/bucket/a.tif", kVsiPath, true, "", {"/vsis3_streaming"}},
        Form{"/vsigs/bucket/a.tif", kVsiPath, true, "", {"/vsigs"}},
        Form{"/vsigs_streaming/bucket/a.tif", kVsiPath, true, "", {"/vsigs_streaming"}},
        Form{"/vsiaz/container/a.tif", kVsiPath, true, "", {"/vsiaz"}},
        Form{"/vsiaz_streaming/container/a.tif", kVsiPath, true, "", {"/vsiaz_streaming"}},
        Form{"/vsiadls/filesystem/a.tif", kVsiPath, true, "", {"/vsiadls"}},
        Form{"/vsioss/bucket/a.tif", kVsiPath, true, "", {"/vsioss"}},
        Form{"/vsioss_streaming/bucket/a.tif", kVsiPath, true, "", {"/vsioss_streaming"}},
        Form{"/vsiswift/bucket/a.tif", kVsiPath, true, "", {"/vsiswift"}},
        Form{"/vsiswift_streaming/bucket/a.tif", kVsiPath, true, "", {"/vsiswift_streaming"}},
        Form{"/vsiwebhdfs/http://host:50070/webhdfs/v1/a.tif", kVsiPath, true, "", {"/vsiwebhdfs"}},
        Form{"/vsihdfs/hdfs://host:9000/a.tif", kVsiPath, true, "", {"/vsihdfs"}},
        // Archives: the archive is the local file, the member is not part of it.
        Form{"/vsizip/a.zip/x.tif", kVsiPath, false, "a.zip", {"/vsizip"}},
        Form{"/vsizip//data/a.zip/sub/x.tif", kVsiPath, false, "/data/a.zip", {"/vsizip"}},
        Form{"/vsizip//data/A.ZIP/x.tif", kVsiPath, false, "/data/A.ZIP", {"/vsizip"}},
        Form{"/vsizip//data/a.zip", kVsiPath, false, "/data/a.zip", {"/vsizip"}},
        Form{"/vsizip//data/survey.kmz/x.tif", kVsiPath, false, "/data/survey.kmz", {"/vsizip"}},
        Form{"/vsizip/{/data/archive}/x.tif", kVsiPath, false, "/data/archive", {"/vsizip"}},
        Form{"/vsizip/{/data/a.zip}/x.tif", kVsiPath, false, "/data/a.zip", {"/vsizip"}},
        Form{"/vsizip//data/a.zip.d/b.zip/x.tif", kVsiPath, false, "/data/a.zip.d/b.zip", {"/vsizip"}},
        Form{"/vsitar//data/a.tar/x.tif", kVsiPath, false, "/data/a.tar", {"/vsitar"}},
        Form{"/vsitar//data/a.tar.gz/x.tif", kVsiPath, false, "/data/a.tar.gz", {"/vsitar"}},
        Form{"/vsitar//data/a.tgz/x.tif", kVsiPath, false, "/data/a.tgz", {"/vsitar"}},
        Form{"/vsi7z//data/a.7z/x.tif", kVsiPath, false, "/data/a.7z", {"/vsi7z"}},
        Form{"/vsirar//data/a.rar/x.tif", kVsiPath, false, "/data/a.rar", {"/vsirar"}},
        // Filters: a whole file decompressed, cut, decrypted, cached.
        Form{"/vsigzip//data/a.tif.gz", kVsiPath, false, "/data/a.tif.gz", {"/vsigzip"}},
        Form{"/vsisubfile/1000_3000,/data/a.ntf", kVsiPath, false, "/data/a.ntf", {"/vsisubfile"}},
        Form{"/vsisubfile/5000,../xyz/raw.dat", kVsiPath, false, "../xyz/raw.dat", {"/vsisubfile"}},
        Form{"/vsisparse//data/sparse.xml", kVsiPath, false, "/data/sparse.xml", {"/vsisparse"}},
        Form{"/vsicrypt/key=secret,file=/data/a.tif", kVsiPath, false, "/data/a.tif", {"/vsicrypt"}},
        Form{"/vsicached?chunk_size=1MB&file=/data/a.tif", kVsiPath, false, "/data/a.tif", {"/vsicached"}},
        // Nothing on disk: memory, standard input and output, names GDAL does not document.
        Form{"/vsimem/a.tif", kVsiPath, false, "", {"/vsimem"}}, Form{"/vsistdin/", kVsiPath, false, "", {"/vsistdin"}},
        Form{"/vsistdin?buffer_limit=-1", kVsiPath, false, "", {"/vsistdin"}},
        Form{"/vsistdout/", kVsiPath, false, "", {"/vsistdout"}},
        Form{"/vsinew/a.tif", kVsiPath, false, "", {"/vsinew"}},
        // Chains: an archive on the network, in braces, with one slash, nested.
        Form{"/vsizip//vsis3/b/x.zip/y.tif", kVsiPath, true, "", {"/vsizip", "/vsis3"}},
        Form{"/vsizip/vsicurl/https://host/x.zip/y.tif", kVsiPath, true, "", {"/vsizip", "/vsicurl"}},
        Form{"/vsitar//vsicurl_streaming/https://host/a.tar.gz/y.tif",
             kVsiPath,
             true,
             "",
             {"/vsitar", "/vsicurl_streaming"}},
        Form{"/vsizip/{/vsis3/b/archive}/y.tif", kVsiPath, true, "", {"/vsizip", "/vsis3"}},
        Form{"/vsizip/{/vsizip//data/outer.zip/inner.zip}/y.tif",
             kVsiPath,
             false,
             "/data/outer.zip",
             {"/vsizip", "/vsizip"}},
        Form{"/vsizip/{/vsistdin?buffer_limit=-1}/y.tif", kVsiPath, false, "", {"/vsizip", "/vsistdin"}},
        Form{"/vsigzip//vsis3/bucket/a.tif.gz", kVsiPath, true, "", {"/vsigzip", "/vsis3"}},
        Form{"/vsisubfile/0_100,/vsizip//data/a.zip/x.bin", kVsiPath, false, "/data/a.zip", {"/vsisubfile", "/vsizip"}},
        Form{"/vsicached?file=/vsicurl/https://host/a.tif", kVsiPath, true, "", {"/vsicached", "/vsicurl"}}));

TEST(InputKind, TheLayersSpanWhatEachFileSystemReads) {
  const std::string input = "/vsizip//vsis3/b/x.zip/y.tif";
  const auto classified = classify_input(input);
  ASSERT_EQ(classified.layers.size(), 2U);
  EXPECT_EQ(input.substr(classified.layers[0].at, classified.layers[0].size), "/vsizip//vsis3/b/x.zip");
  EXPECT_EQ(input.substr(classified.layers[1].at, classified.layers[1].size), "/vsis3/b/x.zip");
  EXPECT_EQ(classified.network_layer()->family, "/vsis3");
  EXPECT_EQ(classify_input("/vsis3_streaming/b/k").network_layer()->family, "/vsis3");
  EXPECT_EQ(classify_input("/vsizip/a.zip/x.tif").network_layer(), nullptr);
  EXPECT_EQ(classify_input("/vsinew/a.tif").first_layer(VsiRole::kUnknown)->prefix, "/vsinew");
}

TEST(InputKind, TheLocalFileIsReplacedAndTheRestKeptByteForByte) {
  const auto replaced = [](const std::string& input, const std::string& file) {
    return with_local_file(input, classify_input(input), file);
  };
  EXPECT_EQ(replaced("/vsizip/a.zip/x.tif", "/data/a.zip"), "/vsizip//data/a.zip/x.tif");
  EXPECT_EQ(replaced("/vsizip/{a}/x.tif", "/data/a"), "/vsizip/{/data/a}/x.tif");
  EXPECT_EQ(replaced("/vsisubfile/10_20,raw.dat", "/data/raw.dat"), "/vsisubfile/10_20,/data/raw.dat");
  EXPECT_EQ(replaced("@list.txt", "/data/list.txt"), "@/data/list.txt");
  EXPECT_EQ(replaced("a.tif", "/data/a.tif"), "/data/a.tif");
  EXPECT_EQ(replaced("/vsicurl_streaming/https://h/x", "ignored"), "/vsicurl_streaming/https://h/x");
}

TEST(InputKind, APathIsAFolderAPatternOrAFileByWhatTheFileSystemHolds) {
  const test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "tiles");
  std::ofstream(dir.file("a[1].tif")) << "x";
  EXPECT_EQ(local_path_kind(dir.file("tiles")), LocalPathKind::kFolder);
  EXPECT_EQ(local_path_kind(dir.file("tiles/*.tif")), LocalPathKind::kPattern);
  EXPECT_EQ(local_path_kind(dir.file("a[1].tif")), LocalPathKind::kFile) << "a name that exists is taken as is";
  EXPECT_EQ(local_path_kind(dir.file("missing.tif")), LocalPathKind::kFile);
}

TEST(InputKind, UrlsNameTheirFileSystem) {
  EXPECT_EQ(vsi_family_of_url("s3://b/k"), "/vsis3");
  EXPECT_EQ(vsi_family_of_url("gs://b/k"), "/vsigs");
  EXPECT_EQ(vsi_family_of_url("https://h/k"), "/vsicurl");
  EXPECT_EQ(vsi_family_of_url("/vsis3/b/k"), "");
}

}  // namespace
}  // namespace mgpr
