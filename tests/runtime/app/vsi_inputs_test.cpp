// One definition of an input for both programs: every GDAL /vsi form `mgpr` reads is one
// `mgpr-submit --dry-run` accepts (and renders for the job with its local part made
// absolute), checked as a table over real archives, compressed and cut files around a
// real GeoTIFF; and the forms a batch job could never read are refused by the launcher.
#include <cpl_vsi.h>
#include <fmt/format.h>

#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

std::string bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `bytes` through GDAL's own writers (/vsizip/, /vsigzip/).
void write_through_gdal(const std::string& path, const std::string& bytes) {
  VSILFILE* file = VSIFOpenL(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(VSIFWriteL(bytes.data(), 1, bytes.size(), file), bytes.size()) << path;
  VSIFCloseL(file);
}

void write_zip(const fs::path& archive, const std::string& member, const std::string& bytes) {
  VSILFILE* zip = VSIFOpenL(("/vsizip/" + archive.string()).c_str(), "wb");  // the archive stays open around it
  ASSERT_NE(zip, nullptr) << archive;
  write_through_gdal("/vsizip/" + archive.string() + "/" + member, bytes);
  VSIFCloseL(zip);
}

struct Run {
  mgpr::CommandResult result;
  std::string command;
};

// `program` with `input` and the suite's small run, from `folder` (relative forms).
Run run_from(const fs::path& folder, const std::string& program, const std::vector<std::string>& arguments) {
  std::string command = "cd '" + folder.string() + "' && '" + program + "'";
  for (const auto& argument : arguments) command += " '" + argument + "'";
  return {run_command({"sh", "-c", command}), command};
}

TEST_F(MgprCli, EveryVsiFormMgprReadsMgprSubmitAccepts) {
  const auto folder = path("vsi-forms");
  fs::create_directories(folder);
  const auto image = write_image("vsi-forms/ortho.tif", 64, 48);
  const auto tiff = bytes_of(image);
  write_zip(folder / "tiles.zip", "sub/ortho.tif", tiff);
  // A name GDAL finds no archive by, read in braces (GDAL writes only a .zip name).
  fs::copy_file(folder / "tiles.zip", folder / "archive");
  write_zip(folder / "outer.zip", "inner.zip", bytes_of(folder / "tiles.zip"));
  write_through_gdal("/vsigzip/" + (folder / "ortho.tif.gz").string(), tiff);
  ASSERT_EQ(run_command({"tar", "-C", folder.string(), "-cf", (folder / "tiles.tar").string(), "ortho.tif"}).exit_code,
            0);
  ASSERT_EQ(run_command({"tar", "-C", folder.string(), "-czf", (folder / "tiles.tgz").string(), "ortho.tif"}).exit_code,
            0);
  std::ofstream(folder / "padded.bin", std::ios::binary) << std::string(100, 'P') << tiff;
  std::ofstream(folder / "sparse.xml") << fmt::format(
      "<VSISparseFile><Length>{0}</Length><SubfileRegion><Filename relative=\"1\">ortho.tif</Filename>"
      "<DestinationOffset>0</DestinationOffset><SourceOffset>0</SourceOffset><RegionLength>{0}</RegionLength>"
      "</SubfileRegion></VSISparseFile>",
      tiff.size());
  const auto at = [&](const std::string& name) { return (folder / name).string(); };

  // Each form, and what the job script must name (relative local parts made absolute).
  const std::vector<std::pair<std::string, std::string>> forms{
      {"/vsizip/" + at("tiles.zip") + "/sub/ortho.tif", "/vsizip/" + at("tiles.zip") + "/sub/ortho.tif"},
      {"/vsizip/tiles.zip/sub/ortho.tif", "/vsizip/" + at("tiles.zip") + "/sub/ortho.tif"},
      {"/vsizip/{" + at("archive") + "}/sub/ortho.tif", "/vsizip/{" + at("archive") + "}/sub/ortho.tif"},
      {"/vsizip/{/vsizip/" + at("outer.zip") + "/inner.zip}/sub/ortho.tif",
       "/vsizip/{/vsizip/" + at("outer.zip") + "/inner.zip}/sub/ortho.tif"},
      {"/vsitar/" + at("tiles.tar") + "/ortho.tif", "/vsitar/" + at("tiles.tar") + "/ortho.tif"},
      {"/vsitar/tiles.tgz/ortho.tif", "/vsitar/" + at("tiles.tgz") + "/ortho.tif"},
      {"/vsigzip/ortho.tif.gz", "/vsigzip/" + at("ortho.tif.gz")},
      {fmt::format("/vsisubfile/100_{},padded.bin", tiff.size()),
       fmt::format("/vsisubfile/100_{},{}", tiff.size(), at("padded.bin"))},
      {"/vsisparse/" + at("sparse.xml"), "/vsisparse/" + at("sparse.xml")},
  };
  for (const auto& [input, in_script] : forms) {
    const std::vector<std::string> arguments{input, "model=" + path("mean.pt").string(), "tile_size=32",
                                             "accelerator=cpu", "output_dir=" + path("vsi-forms-out").string()};
    const auto read = run_from(folder, MGPR_BINARY, arguments);
    ASSERT_EQ(read.result.exit_code, 0) << read.command << "\n" << read.result.out << read.result.err;
    EXPECT_TRUE(contains(read.result.out, "Prediction completed in")) << input;
    auto submit_arguments = arguments;
    submit_arguments.insert(submit_arguments.begin(), "--dry-run");
    const auto submitted = run_from(folder, MGPR_SUBMIT, submit_arguments);
    EXPECT_EQ(submitted.result.exit_code, 0) << submitted.command << "\n" << submitted.result.err;
    EXPECT_TRUE(contains(submitted.result.out, in_script)) << input << " should be rendered as " << in_script << ":\n"
                                                           << submitted.result.out;
  }
}

TEST_F(MgprCli, MgprSubmitRefusesWhatAJobCouldNotReadAndNamesAMissingArchive) {
  const auto submit = [&](const std::string& input) {
    return run_command({MGPR_SUBMIT, "--dry-run", input, "model=" + path("mean.pt").string(),
                        "output_dir=" + path("vsi-refused-out").string()});
  };
  const auto missing = path("no-such.zip").string();
  const auto archive = submit("/vsizip/" + missing + "/ortho.tif");
  EXPECT_EQ(archive.exit_code, 2);
  EXPECT_TRUE(
      contains(archive.err, "archive of raster '/vsizip/" + missing + "/ortho.tif' '" + missing + "' does not exist"))
      << archive.err;
  const auto memory = submit("/vsimem/ortho.tif");
  EXPECT_EQ(memory.exit_code, 2);
  EXPECT_TRUE(contains(memory.err, "GDAL's in-memory file system")) << memory.err;
  const auto stdin_input = submit("/vsistdin/");
  EXPECT_EQ(stdin_input.exit_code, 2);
  EXPECT_TRUE(contains(stdin_input.err, "a batch job does not have")) << stdin_input.err;
  // Remote chains are counted as remote, not checked for a local file.
  const auto remote = submit("/vsizip//vsicurl/https://example.org/tiles.zip/ortho.tif");
  EXPECT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_TRUE(contains(remote.out, "/vsizip//vsicurl/https://example.org/tiles.zip/ortho.tif")) << remote.out;
}

}  // namespace
