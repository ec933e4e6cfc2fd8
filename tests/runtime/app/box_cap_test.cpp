// A detector's cap said out loud: torchvision's detectors return at most
// detections_per_img boxes a tile, and a dense scene loses the rest silently. A tile for
// which the model returned that many is counted and named in the rank's summary, and the
// run's end says how many; the cap comes from the model's own attribute (existing
// exports report it without being exported again) or, where the model keeps none, from
// its card; --model-info prints both.
#include <nlohmann/json.hpp>

#include "mgpr/summary.hpp"
#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

// grid-boxes returns 2 x 2 = 4 boxes for every tile: a cap of 4 is reached by every tile,
// a cap of 5 by none. 150 x 100 px in tiles of 64: 3 x 2 = 6 tiles, the last of a row
// and of a column moved in to end at the raster's edge (x 86, y 36).
constexpr int kTiles = 6;

class BoxCap : public MgprCli {
 protected:
  // Runs the grid detector `model` with the rank's summary kept under `name`/logs;
  // returns the run and the summary.
  static std::pair<CommandResult, mgpr::RankSummary> detect(const fs::path& model, const std::string& name) {
    const auto image = path("box-cap.tif");
    if (!fs::exists(image)) write_image("box-cap.tif", 150, 100);
    const auto logs = path(name) / "logs";
    const auto run =
        run_command({"env", "MGPR_LOG_DIR=" + logs.string(), program(MGPR_BINARY), image.string(),
                     "model=" + model.string(), "task=detect", "tile_size=64", "overlap=0", "accelerator=cpu",
                     "threads=1", "workers=1", "output_dir=" + (path(name) / "out").string()});
    mgpr::RankSummary summary;
    const auto file = logs / "rank-00000.json";
    if (fs::exists(file)) summary = mgpr::rank_summary_from_json(read_text(file), file.string());
    return {run, summary};
  }
};

TEST_F(BoxCap, TilesThatReachTheModelsOwnCapAreCountedAndNamed) {
  const auto capped = test_model("grid-boxes", "grid-cap-4.pt", {"--grid", "2", "--detections-per-img", "4"});
  const auto [run, summary] = detect(capped, "cap-4");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(summary.box_cap, 4);
  EXPECT_EQ(summary.tiles_at_box_cap, kTiles);
  ASSERT_EQ(summary.warnings.size(), 1U) << run.out;
  const auto& warning = summary.warnings.front();
  EXPECT_TRUE(contains(warning,
                       "6 tiles hit the model's cap of 4 boxes and may have lost objects: raise "
                       "detections_per_img or use smaller tiles"))
      << warning;
  for (const char* tile : {"box-cap.tif tile at x 0, y 0", "box-cap.tif tile at x 86, y 36"}) {
    EXPECT_TRUE(contains(warning, tile)) << tile << " not in: " << warning;
  }
  EXPECT_TRUE(contains(run.out, "warning: 6 tiles hit the model's cap of 4 boxes")) << run.out;

  // A cap the tiles do not reach: nothing said.
  const auto roomy = test_model("grid-boxes", "grid-cap-5.pt", {"--grid", "2", "--detections-per-img", "5"});
  const auto [quiet, quiet_summary] = detect(roomy, "cap-5");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out << quiet.err;
  EXPECT_EQ(quiet_summary.box_cap, 5);
  EXPECT_EQ(quiet_summary.tiles_at_box_cap, 0);
  EXPECT_TRUE(quiet_summary.warnings.empty());
  EXPECT_FALSE(contains(quiet.out, "cap of")) << quiet.out;
}

// A model that keeps no cap of its own (a .pt2, a hand-made detector): its card's.
TEST_F(BoxCap, TheCardsCapCountsWhereTheModelKeepsNone) {
  const auto carded = test_model("grid-boxes", "grid-card-cap.pt",
                                 {"--grid", "2", "--card", R"({"mgpr_card": 1, "detections_per_img": 4})"});
  const auto [run, summary] = detect(carded, "card-cap");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(summary.box_cap, 4);
  EXPECT_EQ(summary.tiles_at_box_cap, kTiles);

  // The model's own attribute is what it does, and wins over its card.
  const auto both = test_model(
      "grid-boxes", "grid-both-caps.pt",
      {"--grid", "2", "--detections-per-img", "5", "--card", R"({"mgpr_card": 1, "detections_per_img": 4})"});
  const auto [second, own] = detect(both, "both-caps");
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_EQ(own.box_cap, 5);
  EXPECT_EQ(own.tiles_at_box_cap, 0);
}

TEST_F(BoxCap, ModelInfoPrintsTheCardsAndTheModelsOwnLimits) {
  const auto model = test_model("grid-boxes", "grid-info.pt",
                                {"--grid", "2", "--detections-per-img", "300", "--card",
                                 R"({"mgpr_card": 1, "detections_per_img": 300, "topk_candidates": 1000})"});
  const auto shown = mgpr({"--model-info", model.string()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  for (const char* line : {"detections_per_img: 300 (the most boxes it returns for a tile", "topk_candidates: 1000\n",
                           "the model's own detections_per_img: 300"}) {
    EXPECT_TRUE(contains(shown.out, line)) << line << " not in:\n" << shown.out;
  }
  // A cap that is no whole number from 1 is the card's fault, named.
  const auto zero = test_model("grid-boxes", "grid-zero-cap.pt",
                               {"--grid", "2", "--card", R"({"mgpr_card": 1, "detections_per_img": 0})"});
  const auto refused = mgpr({"--model-info", zero.string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_TRUE(contains(refused.err, "detections_per_img is a detector's most boxes (a whole number from 1), got 0"))
      << refused.err;
}

}  // namespace
