// task=detect with classify_model= through the whole `mgpr` command: the known squares,
// some white and some tinted in their last band, a square detector and a classifier
// that tells the two colours apart must give every square once, with the right
// crop_label_name, at 1 and 2 ranks; a classifier that is no classifier, or refuses its
// crops' size, is refused before any tile is read.
#include <fmt/format.h>
#include <ogrsf_frmts.h>
#include <torch/cuda.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "crops/crop_classifier.hpp"
#include "mgpr/exit_codes.hpp"
#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers
using mgpr::test::kKnownSquares;
using mgpr::test::read_csv_rows;

// Every other known square is tinted: 250 in its last band, where a white one has 255.
// The three bands' mean stays above the detector's threshold (0.99 of 255) either way.
bool tinted(std::size_t square) { return square % 2 == 1; }

fs::path write_two_colour_squares(const fs::path& file) {
  std::vector<std::string> argv{program(MGPR_TEST_IMAGE), file.string(), "--width", "200", "--height", "150"};
  for (std::size_t i = 0; i < kKnownSquares.size(); ++i) {
    argv.insert(argv.end(), {"--square", kKnownSquares[i] + (tinted(i) ? ",250" : "")});
  }
  const auto made = run_command(argv);
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return file;
}

// The known square whose clipped top-left corner is (x1, y1), or none.
std::optional<std::size_t> square_at(int x1, int y1) {
  for (std::size_t i = 0; i < kKnownSquares.size(); ++i) {
    const auto& text = kKnownSquares[i];
    const auto comma = text.find(',');
    const auto x = std::stoi(text.substr(0, comma));
    const auto y = std::stoi(text.substr(comma + 1, text.find(',', comma + 1) - comma - 1));
    if (std::max(x, 0) == x1 && std::max(y, 0) == y1) return i;
  }
  return std::nullopt;
}

const char* const kClassifierCard =
    R"({"mgpr_card": 1, "task": "classify", "tile_size": 24, "class_names": ["tinted", "white"]})";

class CropClasses : public MgprCli {
 protected:
  static void SetUpTestSuite() {
    MgprCli::SetUpTestSuite();
    write_two_colour_squares(path("two-colours.tif"));
    test_model("detector", "squares.pt", {"--threshold", "0.99"});
    test_model("last-band", "colours.pt", {"--threshold", "0.99", "--input-size", "24", "--card", kClassifierCard});
  }

  static std::vector<std::string> detect(const std::string& out, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{path("two-colours.tif").string(),
                                  "model=" + path("squares.pt").string(),
                                  "task=detect",
                                  "tile_size=64",
                                  "overlap=16",
                                  "batch_size=2",
                                  "accelerator=cpu",
                                  "threads=1",
                                  "workers=1",
                                  "classify_model=" + path("colours.pt").string(),
                                  "output_dir=" + path(out).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // The detections of run `name`: every known square once, with its colour's class, sure
  // of it, and the banner naming the batch of crops (32 on a CPU, 128 on a GPU). Returns the
  // table's lines, sorted.
  static std::vector<std::string> expect_every_square_once_with_its_colour(const std::string& name,
                                                                           const CommandResult& run, int crop_batch) {
    EXPECT_TRUE(contains(run.out, "every box classified by " + path("colours.pt").string() +
                                      ": crops of 24 px in batches of " + std::to_string(crop_batch) +
                                      ", classes tinted, white"))
        << run.out;
    const auto table = path(name) / "two-colours_detections.csv";
    const auto rows = read_csv_rows(table);
    EXPECT_EQ(rows.size(), kKnownSquares.size()) << name;
    std::vector<int> found(kKnownSquares.size(), 0);
    for (const auto& row : rows) {
      const auto square = square_at(std::stoi(row.at("x1")), std::stoi(row.at("y1")));
      if (!square) {
        ADD_FAILURE() << name << ": a box at " << row.at("x1") << "," << row.at("y1");
        continue;
      }
      ++found[*square];
      EXPECT_EQ(row.at("crop_label_name"), tinted(*square) ? "tinted" : "white")
          << name << ": " << kKnownSquares[*square];
      EXPECT_EQ(row.at("crop_label"), tinted(*square) ? "0" : "1") << name;
      EXPECT_EQ(std::stod(row.at("crop_score")), 1.0) << name << ": the classifier is sure of a whole square";
    }
    for (std::size_t i = 0; i < found.size(); ++i) EXPECT_EQ(found[i], 1) << name << ": " << kKnownSquares[i];
    std::ifstream in(table);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
  }
};

TEST_F(CropClasses, EverySquareIsFoundOnceWithItsColourAtOneAndTwoRanks) {
  std::vector<std::string> reference;
  for (const auto& [name, ranks] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"crops-1", {}},
           {"crops-2-static", {"gpus=2", "sharding=static"}},
           {"crops-2-dynamic", {"gpus=2", "sharding=dynamic"}}}) {
    const auto run = mgpr(detect(name, ranks));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    const auto lines = expect_every_square_once_with_its_colour(name, run, 32);
    // The same file whichever rank classified which square.
    if (reference.empty()) reference = lines;
    EXPECT_EQ(lines, reference) << name;
  }
}

// With crop_margin the crops take in the background round each square, whose last band is
// below the threshold: every square reads as tinted. The margin is the classifier's context.
TEST_F(CropClasses, TheMarginAddsTheSquaresSurroundings) {
  const auto run = mgpr(detect("crops-margin", {"crop_margin=3"}));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto rows = read_csv_rows(path("crops-margin") / "two-colours_detections.csv");
  ASSERT_EQ(rows.size(), kKnownSquares.size());
  for (const auto& row : rows) EXPECT_EQ(row.at("crop_label_name"), "tinted");
}

// A white square of 12 px at x 50..62, whole in the first two columns of tiles (0..64 and
// 48..112), inside a ring 6 px wide that is 0 in the last band (not bright enough for the
// detector). With crop_margin=6 its crop is 24 x 24 px at x 44..68, past the edge of
// either tile that holds it: read from the raster it is a quarter white (144 of 576
// pixels), and the classifier, whose line is 0.275 of the last band, calls it tinted; cut
// at either tile's edge it would be 20 px wide and 0.3 white.
TEST_F(CropClasses, ACropPastItsTileIsReadFromTheRaster) {
  std::vector<std::string> argv{
      program(MGPR_TEST_IMAGE), path("ring.tif").string(), "--width", "200", "--height", "150", "--square", "50,20,12"};
  for (const auto& [x, y] : std::vector<std::pair<int, int>>{{44, 14},
                                                             {44, 20},
                                                             {44, 26},
                                                             {44, 32},
                                                             {62, 14},
                                                             {62, 20},
                                                             {62, 26},
                                                             {62, 32},
                                                             {50, 14},
                                                             {56, 14},
                                                             {50, 32},
                                                             {56, 32}}) {
    argv.insert(argv.end(), {"--square", fmt::format("{},{},6,0", x, y)});
  }
  const auto made = run_command(argv);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto quarter = test_model("last-band", "quarter-white.pt",
                                  {"--threshold", "0.275", "--input-size", "24", "--card", kClassifierCard});
  for (const auto& [name, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"ring-margin-0", {"crop_margin=0"}},
           {"ring-1", {"crop_margin=6"}},
           {"ring-2", {"crop_margin=6", "gpus=2", "sharding=static"}}}) {
    auto arguments = detect(name, extra);
    arguments.at(0) = path("ring.tif").string();
    std::replace(arguments.begin(), arguments.end(), "classify_model=" + path("colours.pt").string(),
                 "classify_model=" + quarter.string());
    const auto run = mgpr(arguments);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    const auto rows = read_csv_rows(path(name) / "ring_detections.csv");
    ASSERT_EQ(rows.size(), 1U) << name;
    EXPECT_EQ(rows[0].at("x1"), "50") << name;
    EXPECT_EQ(rows[0].at("x2"), "62") << name;
    // The square alone is white; with its ring, read whole, a quarter white.
    EXPECT_EQ(rows[0].at("crop_label_name"), name == "ring-margin-0" ? "white" : "tinted") << name;
  }
}

// Every vector format carries the three fields; a Shapefile under dBASE's ten characters.
TEST_F(CropClasses, EveryFormatCarriesTheCropsClasses) {
  for (const auto& [format, extension, name_field] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"gpkg", "gpkg", "crop_label_name"},
                                                                      {"fgb", "fgb", "crop_label_name"},
                                                                      {"geojson", "geojson", "crop_label_name"},
                                                                      {"shp", "shp", "crop_name"}}) {
    const auto out = "crops-" + format;
    const auto run = mgpr(detect(out, {"output_format=" + format}));
    ASSERT_EQ(run.exit_code, 0) << format << run.out << run.err;
    const auto file = path(out) / ("two-colours_detections." + extension);
    GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY));
    ASSERT_TRUE(dataset) << file;
    auto* layer = dataset->GetLayer(0);
    ASSERT_EQ(layer->GetFeatureCount(), static_cast<GIntBig>(kKnownSquares.size())) << format;
    int tinted_found = 0;
    for (auto& feature : *layer) {
      const std::string name = feature->GetFieldAsString(name_field.c_str());
      EXPECT_TRUE(name == "tinted" || name == "white") << format << ": '" << name << "'";
      EXPECT_EQ(feature->GetFieldAsInteger("crop_label"), name == "white" ? 1 : 0) << format;
      EXPECT_DOUBLE_EQ(feature->GetFieldAsDouble("crop_score"), 1.0) << format;
      tinted_found += name == "tinted" ? 1 : 0;
    }
    EXPECT_EQ(tinted_found, 3) << format;  // squares 1, 3 and 5 of the seven
  }
}

// The same squares, detected and classified on the GPU, in the GPU's batches of crops.
TEST_F(CropClasses, OnAGpuEverySquareHasItsColour) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device visible to LibTorch (CPU-only build or no GPU on this machine)";
  }
  auto arguments = detect("crops-gpu");
  std::replace(arguments.begin(), arguments.end(), std::string("accelerator=cpu"), std::string("accelerator=gpu"));
  const auto run = mgpr(arguments);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  expect_every_square_once_with_its_colour("crops-gpu", run, mgpr::runtime::kGpuCropBatch);
}

TEST_F(CropClasses, AClassifierThatIsNoneOrRefusesItsCropsIsRefusedBeforeAnyTile) {
  const auto detector_card =
      test_model("detector", "detector-card.pt", {"--card", R"({"mgpr_card": 1, "task": "detect", "tile_size": 24})"});
  const auto no_card = test_model("last-band", "no-card.pt");
  const auto wrong_size =
      test_model("last-band", "wrong-size.pt",
                 {"--input-size", "20", "--card", R"({"mgpr_card": 1, "task": "classify", "tile_size": 24})"});
  const std::vector<std::pair<fs::path, std::string>> refusals{
      {detector_card, "says task=detect, and a crop classifier is a classification model"},
      {no_card, "has no model card"},
      {wrong_size, "the crop classifier, on crops of 24 px"},
      {path("missing.pt"), "no such file"}};
  for (const auto& [model, reason] : refusals) {
    const auto out = "refused-" + model.stem().string();
    const auto run = mgpr(detect(out, {"classify_model=" + model.string()}));
    EXPECT_EQ(run.exit_code, mgpr::kExitUsage) << model;
    EXPECT_TRUE(contains(run.err, "classify_model=" + model.string())) << run.err;
    EXPECT_TRUE(contains(run.err, reason)) << run.err;
    EXPECT_FALSE(fs::exists(path(out) / "two-colours_detections.csv")) << model;
  }
  // A classifier for another task than detect.
  auto segment = detect("refused-segment", {"task=segment"});
  const auto run = mgpr(segment);
  EXPECT_EQ(run.exit_code, mgpr::kExitUsage);
  EXPECT_TRUE(contains(run.err, "classifies the crops of detected boxes, and this run has task=segment")) << run.err;
}

}  // namespace
