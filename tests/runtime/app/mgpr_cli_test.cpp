// `mgpr` end to end, as a user runs it: real GeoTIFFs written with GDAL, TorchScript
// models saved by the test, real rank processes started by `mgpr gpus=N`. The model
// returns each tile's mean, so every result is checked against GDAL's own reads.
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <torch/script.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "geometry/tiler.hpp"
#include "mgpr/process.hpp"
#include "support/known_squares.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::CommandResult;
using mgpr::run_command;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class MgprCli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    GDALAllRegister();
    dir_ = mgpr::test::program_temp_dir().path();
    torch::jit::Module module("TileMean");
    module.register_attribute("training", c10::BoolType::get(), false);
    module.define("def forward(self, x):\n    m = torch.mean(x, [1, 2, 3])\n    return torch.stack([m, -m], 1)\n");
    module.save((dir_ / "mean.pt").string());
  }

  static fs::path path(const std::string& name) { return dir_ / name; }

  // A 3-band Byte GeoTIFF with seeded random pixels, georeferenced in EPSG:32633.
  static fs::path write_image(const std::string& name, int width, int height) {
    const auto file = path(name);
    auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
    GDALDatasetUniquePtr dataset(driver->Create(file.c_str(), width, height, 3, GDT_Byte, nullptr));
    const double transform[6] = {500000, 0.5, 0, 6000000, 0, -0.5};
    dataset->SetGeoTransform(const_cast<double*>(transform));
    std::mt19937 random(static_cast<unsigned>(width * 31 + height));
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height);
    for (int band = 1; band <= 3; ++band) {
      for (auto& value : pixels) value = static_cast<std::uint8_t>(random() % 256);
      EXPECT_EQ(dataset->GetRasterBand(band)->RasterIO(GF_Write, 0, 0, width, height, pixels.data(), width, height,
                                                       GDT_Byte, 0, 0),
                CE_None);
    }
    return file;
  }

  // The mean the model must report for a tile: bands 1-3 over the window scaled by 1/255,
  // zero padding up to tile_size when the image is smaller than a tile.
  static double expected_mean(const fs::path& image, int x, int y, int width, int height, int tile_size) {
    GDALDatasetUniquePtr dataset(GDALDataset::Open(image.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    std::vector<double> values(static_cast<std::size_t>(width) * height * 3);
    int bands[3] = {1, 2, 3};
    EXPECT_EQ(dataset->RasterIO(GF_Read, x, y, width, height, values.data(), width, height, GDT_Float64, 3, bands, 0, 0,
                                0, nullptr),
              CE_None);
    double sum = 0;
    for (const double value : values) sum += value / 255.0;
    return sum / (3.0 * tile_size * tile_size);
  }

  static CommandResult mgpr(std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), MGPR_BINARY);
    return run_command(arguments);
  }

  static std::string read_text(const fs::path& file) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  struct Row {
    int image, row, column, x, y, width, height, label;
    double score, logit;
  };
  // <stem>_tiles.csv rows, keyed by tile id; fails the test on a duplicate tile.
  static std::map<std::tuple<int, int, int>, Row> read_scores(const fs::path& file) {
    std::map<std::tuple<int, int, int>, Row> rows;
    std::istringstream lines(read_text(file));
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line, "raster,image,row,column,x,y,width,height,center_x,center_y,label,score,logit");
    while (std::getline(lines, line)) {
      std::replace(line.begin(), line.end(), ',', ' ');
      std::istringstream fields(line);
      std::string raster;
      Row r{};
      double center_x = 0;
      double center_y = 0;
      fields >> raster >> r.image >> r.row >> r.column >> r.x >> r.y >> r.width >> r.height >> center_x >> center_y >>
          r.label >> r.score >> r.logit;
      EXPECT_TRUE(rows.emplace(std::tuple{r.image, r.row, r.column}, r).second) << "tile listed twice: " << line;
    }
    return rows;
  }

  static inline fs::path dir_;
};

TEST_F(MgprCli, EachTilesMeanComesThroughTheWholePipeline) {
  const auto image = write_image("mean.tif", 100, 70);
  const auto out = path("mean-out");
  const auto result = mgpr({image.string(), "model=" + path("mean.pt").string(), "tile_size=32", "overlap=4",
                            "batch_size=3", "workers=2", "accelerator=cpu", "output_dir=" + out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto rows = read_scores(out / "mean_tiles.csv");
  const auto tiles = mgpr::runtime::tile_image(0, 100, 70, 32, 4);
  ASSERT_EQ(rows.size(), tiles.size());
  for (const auto& tile : tiles) {
    const auto& row = rows.at({0, tile.id.row, tile.id.column});
    EXPECT_EQ(row.x, tile.window.x);
    EXPECT_EQ(row.y, tile.window.y);
    EXPECT_NEAR(row.logit,
                expected_mean(image, tile.window.x, tile.window.y, tile.window.width, tile.window.height, 32), 1e-5);
    EXPECT_EQ(row.label, 0);
  }
  EXPECT_TRUE(contains(result.out, "Prediction completed in")) << result.out;
}

TEST_F(MgprCli, AnImageSmallerThanATileIsPadded) {
  const auto image = write_image("small.tif", 20, 12);
  const auto out = path("small-out");
  const auto result = mgpr({image.string(), "model=" + path("mean.pt").string(), "tile_size=32", "accelerator=cpu",
                            "output_dir=" + out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto rows = read_scores(out / "small_tiles.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows.begin()->second.logit, expected_mean(image, 0, 0, 20, 12, 32), 1e-5);
}

TEST_F(MgprCli, SameResultsForOneTwoThreeRanksStaticAndDynamic) {
  const auto image = write_image("ranks.tif", 96, 80);
  std::string reference;
  for (const std::string sharding : {"static", "dynamic"}) {
    for (const int ranks : {1, 2, 3}) {
      const auto out = path("ranks-" + sharding + std::to_string(ranks));
      const auto result = mgpr({image.string(), "model=" + path("mean.pt").string(), "tile_size=16", "batch_size=2",
                                "accelerator=cpu", "threads=1", "workers=1", "gpus=" + std::to_string(ranks),
                                "sharding=" + sharding, "output_dir=" + out.string()});
      ASSERT_EQ(result.exit_code, 0) << sharding << ' ' << ranks << '\n' << result.out << result.err;
      const auto scores = read_text(out / "ranks_tiles.csv");
      EXPECT_EQ(read_scores(out / "ranks_tiles.csv").size(), 30u) << sharding << ' ' << ranks;
      if (reference.empty()) reference = scores;
      EXPECT_EQ(scores, reference) << sharding << " sharding on " << ranks << " ranks";
    }
  }
}

TEST_F(MgprCli, TwoCpuRanksOverA4096ImageProcessEveryTileOnceAndReportBoth) {
  const auto image = path("big.tif");
  const auto made = run_command({MGPR_TEST_IMAGE, image.string(), "--size", "4096"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto out = path("big-out");
  const auto result = mgpr(
      {image.string(), "model=" + path("mean.pt").string(), "gpus=2", "accelerator=cpu", "output_dir=" + out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(read_scores(out / "big_tiles.csv").size(), 16u);  // 4 x 4 tiles of 1024
  EXPECT_TRUE(contains(result.out, "GPU Usage Summary")) << result.out;
  EXPECT_TRUE(contains(result.out, "rank   0:")) << result.out;
  EXPECT_TRUE(contains(result.out, "rank   1:")) << result.out;
  EXPECT_TRUE(contains(result.out, "total: 16 tiles on 2 ranks")) << result.out;
}

TEST_F(MgprCli, FakeDataNeedsNoRasterAndNoModelFile) {
  const auto out = path("fake-out");
  const auto result = mgpr({"use_fake_data=true", "dummy_dataset_count=6", "tile_size=64", "batch_size=4",
                            "accelerator=cpu", "output_dir=" + out.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(read_scores(out / "fake_tiles.csv").size(), 6u);
  EXPECT_TRUE(contains(result.out, "builtin:resnet50")) << result.out;
}

// Issue 13: a full disk while the GeoPackage was written gave kilobytes of SQLite's SQL
// and "database or disk is full". For each writer a tmpfs small enough to fill during
// it: exit 1, the disk named as full, a short message, no output that looks complete,
// and the journal kept for the rerun. (The COG and the quicklook: the next test.)
TEST_F(MgprCli, AFullDiskWhileWritingIsNamedAndLeavesNoCompleteLookingOutput) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs (CI runs as root)";
  const auto image = write_image("objects.tif", 512, 512);
  const auto detector = path("detector.pt");
  const auto segmenter = path("segmenter.pt");
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "detector", detector.string()}).exit_code, 0);
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "segmenter", segmenter.string()}).exit_code, 0);
  struct Writer {
    std::string name;
    std::vector<std::string> arguments;
    std::string tmpfs_size;
    std::string complete_output;  // must not exist after the failure
  };
  const std::vector<Writer> writers{
      {"GeoPackage", {"model=" + detector.string(), "task=detect", "tile_size=64"}, "24k", "objects_detections.gpkg"},
      {"GeoTIFF pieces",
       {"model=" + segmenter.string(), "task=segment", "tile_size=64"},
       "24k",
       "objects_segmentation.vrt"},
      {"journal", {"model=builtin:resnet50", "tile_size=16"}, "8k", "objects_tiles.csv"},
  };
  for (const auto& writer : writers) {
    const auto full = path("full-disk-" + std::to_string(&writer - writers.data()));
    fs::create_directories(full);
    const auto options = "size=" + writer.tmpfs_size;
    if (::mount("tmpfs", full.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    auto arguments = writer.arguments;
    arguments.insert(arguments.begin(), image.string());
    arguments.push_back("accelerator=cpu");
    arguments.push_back("output_dir=" + full.string());
    const auto result = mgpr(arguments);
    const bool complete_looking = fs::exists(full / writer.complete_output);
    const bool journal_kept = fs::exists(full / ".mgpr-journal");
    ::umount(full.c_str());
    EXPECT_EQ(result.exit_code, 1) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "is full")) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "run the same command again")) << writer.name << ": " << result.err;
    EXPECT_LT(result.err.size(), 2000U) << writer.name << ": a message for people, not SQLite's SQL";
    EXPECT_FALSE(complete_looking) << writer.name << ": an output cut short must not look complete";
    EXPECT_TRUE(journal_kept) << writer.name << ": the finished tiles must survive for the rerun";
  }
}

// The COG and the quicklook are written last, from outputs already complete. The disk
// is sized from a run without them (its use, plus less than they take) to fill there:
// exit 1, the disk named as full, no COG or quicklook under its final name, and the
// outputs written before it (the VRT and its pieces; the CSV and GeoPackage) kept whole.
TEST_F(MgprCli, AFullDiskAtTheCogOrQuicklookKeepsTheOutputsWrittenBefore) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs (CI runs as root)";
  const auto image = write_image("last.tif", 512, 512);
  const auto detector = path("detector.pt");
  const auto segmenter = path("half-segmenter.pt");
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "detector", detector.string()}).exit_code, 0);
  // Half the random pixels are class 1: a COG deflate cannot shrink below 8 KiB.
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "segmenter", segmenter.string(), "--threshold", "0.5"}).exit_code, 0);
  struct LastWriter {
    std::string name;
    std::vector<std::string> arguments;
    std::string option;  // turns the last output on
    std::string last_output;
    std::vector<std::string> earlier_outputs;
    std::uintmax_t room;  // over the others' final use: their peak fits, the last output does not
  };
  const std::vector<LastWriter> writers{
      {"COG",
       {"model=" + segmenter.string(), "task=segment", "tile_size=128"},
       "cog=true",
       "last_segmentation.tif",
       {"last_segmentation.vrt", "last_segmentation/tile_r3_c3.tif"},
       8 << 10},  // the COG takes about 20 KiB
      {"quicklook",
       {"model=" + detector.string(), "task=detect", "tile_size=128"},
       "quicklook=true",
       "last_quicklook.png",
       {"last_detections.csv", "last_detections.gpkg"},
       256 << 10},  // SQLite's journal needs room while the GeoPackage is written; the PNG takes 600 KiB
  };
  for (const auto& writer : writers) {
    const auto disk = path("last-disk-" + std::to_string(&writer - writers.data()));
    fs::create_directories(disk);
    auto arguments = writer.arguments;
    arguments.insert(arguments.begin(), image.string());
    arguments.push_back("accelerator=cpu");
    arguments.push_back("output_dir=" + disk.string());
    // Without the last output, on a roomy disk: how much the rest takes.
    if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    const auto without = mgpr(arguments);
    struct statvfs use {};
    ASSERT_EQ(::statvfs(disk.c_str(), &use), 0);
    ::umount(disk.c_str());
    ASSERT_EQ(without.exit_code, 0) << writer.name << ": " << without.err;
    const auto used = (use.f_blocks - use.f_bfree) * use.f_frsize;
    const auto size = "size=" + std::to_string(used + writer.room);
    ASSERT_EQ(::mount("tmpfs", disk.c_str(), "tmpfs", 0, size.c_str()), 0) << std::strerror(errno);
    arguments.push_back(writer.option);
    const auto result = mgpr(arguments);
    const bool last_exists = fs::exists(disk / writer.last_output);
    std::vector<std::string> earlier_missing;
    for (const auto& earlier : writer.earlier_outputs) {
      if (!fs::exists(disk / earlier)) earlier_missing.push_back(earlier);
    }
    const bool journal_kept = fs::exists(disk / ".mgpr-journal");
    ::umount(disk.c_str());
    EXPECT_EQ(result.exit_code, 1) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "is full")) << writer.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, writer.last_output)) << writer.name << ": names the file: " << result.err;
    EXPECT_LT(result.err.size(), 2000U) << writer.name;
    EXPECT_FALSE(last_exists) << writer.name << ": cut short, it must not look complete";
    EXPECT_TRUE(earlier_missing.empty()) << writer.name << ": lost " << testing::PrintToString(earlier_missing);
    EXPECT_TRUE(journal_kept) << writer.name << ": the finished tiles must survive for the rerun";
  }
}

// Issue 13's fault suite: two runs of one job on one output folder at once (a job
// submitted twice) both finish, and the outputs are those of a single run: each file is
// written under a temporary name and renamed, and the shared journal's first result of
// a tile wins.
TEST_F(MgprCli, TwoRunsOnOneOutputFolderAtOnceGiveTheOutputsOfOne) {
  const auto image = write_image("twice.tif", 128, 128);
  const auto model = path("slow-detector.pt");
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "detector", model.string(), "--slow", "100"}).exit_code, 0);
  const auto run_in = [&](const fs::path& out) {
    return std::vector<std::string>{
        MGPR_BINARY,    image.string(), "model=" + model.string(), "task=detect",
        "tile_size=32", "batch_size=2", "accelerator=cpu",         "output_dir=" + out.string()};
  };
  const auto shared = path("shared-out");
  {
    mgpr::test::Process first(run_in(shared), {}, dir_, "first");
    mgpr::test::Process second(run_in(shared), {}, dir_, "second");
    const auto a = first.wait(std::chrono::seconds(300));
    const auto b = second.wait(std::chrono::seconds(300));
    EXPECT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(b.code, 0) << b.err;
  }
  const auto alone = path("alone-out");
  ASSERT_EQ(mgpr({image.string(), "model=" + model.string(), "task=detect", "tile_size=32", "batch_size=2",
                  "accelerator=cpu", "output_dir=" + alone.string()})
                .exit_code,
            0);
  EXPECT_EQ(read_text(shared / "twice_detections.csv"), read_text(alone / "twice_detections.csv"));
  EXPECT_FALSE(read_text(alone / "twice_detections.csv").empty());
}

// Issue 18: a model reports, in every 1024 tile, a larger object and a smaller one the
// tile's right edge cuts (IoU 0.26). On a 2048 image with overlap 0 no tile holds the
// cut ones whole, so all eight boxes are objects; the containment rule dropped the two
// cut in the left tiles. One rank and two give the same file.
TEST_F(MgprCli, ACutObjectBesideALargerOneOfItsTileIsKeptOnOneAndTwoRanks) {
  const auto image = write_image("pairs.tif", 2048, 2048);
  const auto model = path("fixed-boxes.pt");
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "fixed-boxes", model.string()}).exit_code, 0);
  std::vector<std::string> csv_by_ranks;
  for (const int ranks : {1, 2}) {
    const auto out = path("pairs-out-" + std::to_string(ranks));
    const auto result =
        mgpr({image.string(), "model=" + model.string(), "task=detect", "tile_size=1024", "overlap=0", "batch_size=2",
              "accelerator=cpu", "gpus=" + std::to_string(ranks), "output_dir=" + out.string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    csv_by_ranks.push_back(read_text(out / "pairs_detections.csv"));
  }
  const auto& csv = csv_by_ranks.front();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 8) << csv;
  EXPECT_EQ(csv_by_ranks[1], csv);
}

// The same model with overlap 128: tiles start at 0, 896 and 1024 on each axis. Every kept
// box is listed (worked out by hand from docs/outputs.md and confirmed by the independent
// Python merge in tests/torchvision/reference.py): a fragment cut by a tile edge goes when
// half of it lies in a box another tile kept (the cut boxes of rows 1 and 2, inside the
// next row's larger box), stays beside its own tile's larger box (row 0), and a whole box
// goes when its IoU with a higher-ranked one reaches 0.5 (the column 2 larger boxes).
TEST_F(MgprCli, CutObjectsOnOverlappingTilesFollowTheDocumentedMergeOnOneAndTwoRanks) {
  const auto image = write_image("overlapping.tif", 2048, 2048);
  const auto model = path("fixed-boxes.pt");
  ASSERT_EQ(run_command({MGPR_TEST_MODEL, "fixed-boxes", model.string()}).exit_code, 0);
  const std::vector<std::string> expected{
      "500,100,1000,400",    "1396,100,1896,400",   "800,150,1024,350",   "1696,150,1920,350",
      "1824,150,2048,350",   "500,996,1000,1296",   "1396,996,1896,1296", "1824,1046,2048,1246",
      "500,1124,1000,1424",  "1396,1124,1896,1424", "1824,1174,2048,1374"};
  for (const int ranks : {1, 2}) {
    const auto out = path("overlapping-out-" + std::to_string(ranks));
    const auto result =
        mgpr({image.string(), "model=" + model.string(), "task=detect", "tile_size=1024", "overlap=128",
              "batch_size=2", "accelerator=cpu", "gpus=" + std::to_string(ranks), "output_dir=" + out.string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    std::vector<std::string> kept;
    for (const auto& row : mgpr::test::read_csv_rows(out / "overlapping_detections.csv")) {
      kept.push_back(row.at("x1") + "," + row.at("y1") + "," + row.at("x2") + "," + row.at("y2"));
    }
    EXPECT_EQ(kept, expected) << ranks << " rank(s)";
  }
}

struct BadInput {
  std::string name;
  std::vector<std::string> arguments;
  std::string message;  // part of stderr that names the fault or the fix
};

TEST_F(MgprCli, BadInputsAreRefusedByName) {
  const auto image = write_image("good.tif", 40, 40).string();
  const auto text_file = path("notes.tif");
  std::ofstream(text_file) << "not a raster\n";
  const auto truncated = path("truncated.tif");
  {
    const auto bytes = read_text(image);
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  const std::string mean = "model=" + path("mean.pt").string();
  const std::vector<BadInput> cases{
      {"missing raster", {path("nowhere.tif").string(), mean}, "nowhere.tif"},
      {"text file", {text_file.string(), mean}, "notes.tif"},
      {"truncated GeoTIFF", {truncated.string(), mean, "tile_size=16"}, "truncated.tif"},
      {"tile size 0", {image, mean, "tile_size=0"}, "tile_size must be at least 1"},
      {"absurd tile size", {image, mean, "tile_size=1000000"}, "tile_size=1000000 is too large"},
      {"band out of range", {image, mean, "bands=1,5"}, "5"},
      {"missing model", {image, "model=" + path("none.pt").string()}, "none.pt"},
      {"unknown key", {image, mean, "tile_sise=8"}, "did you mean tile_size"},
      {"missing operator library",
       {image, mean, "model_libraries=/nowhere/libops.so"},
       "model_libraries: cannot load '/nowhere/libops.so'"},
      // Issue 13: a bare std::bad_alloc once the batch was being filled.
      {"batch beyond the node's memory",
       {image, mean, "batch_size=4096", "tile_size=8192"},
       "lower batch_size or tile_size"},
      {"detect model returning logits", {image, mean, "task=detect", "tile_size=16"}, "task=detect needs a [B, N, 6]"},
  };
  for (const auto& bad : cases) {
    auto arguments = bad.arguments;
    arguments.push_back("accelerator=cpu");
    arguments.push_back("output_dir=" + path("bad-out").string());
    const auto result = mgpr(arguments);
    EXPECT_NE(result.exit_code, 0) << bad.name;
    EXPECT_TRUE(contains(result.err, bad.message)) << bad.name << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "mgpr: error:")) << bad.name << ": " << result.err;
  }
  EXPECT_FALSE(fs::exists(path("bad-out") / "good_tiles.csv"));
}

}  // namespace
