// `mgpr` end to end, as a user runs it: real GeoTIFFs written with GDAL, TorchScript
// models saved by the test, real rank processes started by `mgpr gpus=N`. The model
// returns each tile's mean, so every result is checked against GDAL's own reads.
#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

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

// A model reports, in every 1024 tile, a larger object and a smaller one the
// tile's right edge cuts (IoU 0.26). On a 2048 image with overlap 0 no tile holds the
// cut ones whole, so all eight boxes are objects; the containment rule dropped the two
// cut in the left tiles. One rank and two give the same file.
TEST_F(MgprCli, ACutObjectBesideALargerOneOfItsTileIsKeptOnOneAndTwoRanks) {
  const auto image = write_image("pairs.tif", 2048, 2048);
  const auto model = test_model("fixed-boxes", "fixed-boxes.pt");
  ASSERT_FALSE(HasFailure());
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
  const auto model = test_model("fixed-boxes", "fixed-boxes.pt");
  ASSERT_FALSE(HasFailure());
  const std::vector<std::string> expected{"500,100,1000,400",    "1396,100,1896,400",   "800,150,1024,350",
                                          "1696,150,1920,350",   "1824,150,2048,350",   "500,996,1000,1296",
                                          "1396,996,1896,1296",  "1824,1046,2048,1246", "500,1124,1000,1424",
                                          "1396,1124,1896,1424", "1824,1174,2048,1374"};
  for (const int ranks : {1, 2}) {
    const auto out = path("overlapping-out-" + std::to_string(ranks));
    const auto result =
        mgpr({image.string(), "model=" + model.string(), "task=detect", "tile_size=1024", "overlap=128", "batch_size=2",
              "accelerator=cpu", "gpus=" + std::to_string(ranks), "output_dir=" + out.string()});
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
      // A bare std::bad_alloc once the batch was being filled.
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
