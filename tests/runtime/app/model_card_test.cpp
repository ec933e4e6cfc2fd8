// Model cards through the whole `mgpr` command: a card's bands and
// normalisation give what the same keys typed by hand give; a card that contradicts the
// model (class count against the output, band count against the first layer) is refused
// by name before any tile is read, and an override that fixes it is taken; the banner and
// --model-info name the card. Cards are saved by LibTorch itself (torch::jit::Module::save
// with extra files), as torch.jit.save(_extra_files=) saves them from Python.
#include <torch/script.h>

#include "mgpr_cli_fixture.hpp"

namespace {

using namespace mgpr::test::cli;  // NOLINT: the suite's fixture and helpers

// The suite's tile-mean classifier (two logits: the tile's mean and its negation) with a card.
fs::path tile_mean_with_card(const fs::path& file, const std::string& card) {
  mgpr::test::tile_mean_module().save(file.string(), {{"mgpr.json", card}});
  return file;
}

// A convolution over 3 bands first, as image networks start: its weight says how many
// bands the model takes.
fs::path three_band_conv_with_card(const fs::path& file, const std::string& card) {
  torch::jit::Module module("Conv");
  module.register_attribute("training", c10::BoolType::get(), false);
  module.register_parameter("conv_weight", torch::ones({2, 3, 3, 3}), false);
  module.define(R"(
def forward(self, x):
    return torch.conv2d(x, self.conv_weight).mean([2, 3])
)");
  module.save(file.string(), {{"mgpr.json", card}});
  return file;
}

std::vector<std::string> classify(const fs::path& image, const fs::path& model, const fs::path& out) {
  return {image.string(), "model=" + model.string(),   "accelerator=cpu", "threads=1",
          "workers=1",    "output_dir=" + out.string()};
}

TEST_F(MgprCli, ModelCardSettingsGiveWhatTheSameKeysGiveByHand) {
  const auto image = write_image("card-image.tif", 150, 100);
  const std::string settings =
      R"("bands": [3, 1], "scale": 0.5, "mean": [1, 2], "std": [2, 4], "tile_size": 64, "overlap": 8,
         "class_names": ["bright", "dark"])";
  const auto carded = tile_mean_with_card(path("card-mean.pt"), "{" + settings + R"(, "name": "Tile mean"})");

  const auto with_card = mgpr(classify(image, carded, path("card-out")));
  ASSERT_EQ(with_card.exit_code, 0) << with_card.out << with_card.err;
  EXPECT_TRUE(contains(with_card.out,
                       "model card: Tile mean, sets bands, scale, mean, std, tile_size, overlap, "
                       "class_names"))
      << with_card.out;

  // The card's twin without a card, and the same settings typed as keys.
  auto by_hand = classify(image, path("mean.pt"), path("card-by-hand"));
  by_hand.insert(by_hand.end(), {"bands=[3,1]", "scale=0.5", "mean=[1,2]", "std=[2,4]", "tile_size=64", "overlap=8",
                                 "class_names=[bright,dark]"});
  const auto typed = mgpr(by_hand);
  ASSERT_EQ(typed.exit_code, 0) << typed.out << typed.err;
  const auto card_csv = read_text(path("card-out") / "card-image_tiles.csv");
  EXPECT_EQ(card_csv, read_text(path("card-by-hand") / "card-image_tiles.csv"));
  EXPECT_TRUE(contains(card_csv, "label,label_name,")) << card_csv;

  // And the settings matter: mgpr's defaults give other tiles and other scores.
  const auto plain = mgpr(classify(image, path("mean.pt"), path("card-plain")));
  ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_NE(card_csv, read_text(path("card-plain") / "card-image_tiles.csv"));
}

TEST_F(MgprCli, ModelCardThatContradictsTheModelIsRefusedByName) {
  const auto image = write_image("card-contradiction.tif", 64, 64);
  // Three class names for a model with two logits.
  const auto three_names = tile_mean_with_card(path("card-three-names.pt"), R"({"class_names": ["a", "b", "c"]})");
  auto refused = mgpr(classify(image, three_names, path("card-refused-1")));
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_TRUE(contains(refused.err, "model card in '" + three_names.string() + "'")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "3 classes")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "has 2 logits")) << refused.err;
  EXPECT_FALSE(fs::exists(path("card-refused-1") / "card-contradiction_tiles.csv"));

  // Two bands for a first layer that takes three.
  const auto two_bands = three_band_conv_with_card(path("card-two-bands.pt"), R"({"bands": [1, 2]})");
  refused = mgpr(classify(image, two_bands, path("card-refused-2")));
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_TRUE(contains(refused.err, "model card in '" + two_bands.string() + "' says bands=[1,2]")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "takes 3 bands in its first layer")) << refused.err;

  // An override beats the card, and with it the model runs.
  auto fixed = classify(image, two_bands, path("card-fixed"));
  fixed.emplace_back("bands=[1,2,3]");
  const auto ran = mgpr(fixed);
  EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;

  // A card with a key mgpr does not know is refused before anything runs.
  const auto misspelt = tile_mean_with_card(path("card-misspelt.pt"), R"({"tile_sise": 256})");
  refused = mgpr(classify(image, misspelt, path("card-refused-3")));
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_TRUE(contains(refused.err, "unknown key 'tile_sise'")) << refused.err;
}

TEST_F(MgprCli, ModelInfoPrintsTheCardLibTorchSaved) {
  const auto model = tile_mean_with_card(
      path("card-info.pt"),
      R"({"mgpr_card": 1, "name": "Tile mean", "version": "2.1", "licence": "CC0", "gsd": 0.25, "tile_size": 128})");
  const auto shown = mgpr({"--model-info", model.string()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  for (const char* line : {"name: Tile mean\n", "version: 2.1\n", "licence: CC0\n", "gsd = 0.25\n", "tile_size = 128\n",
                           "32 m and 0 m on the ground at 0.25 m per pixel"}) {
    EXPECT_TRUE(contains(shown.out, line)) << line << " not in:\n" << shown.out;
  }
  const auto none = mgpr({"--model-info", path("mean.pt").string()});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_TRUE(contains(none.out, "card: none")) << none.out;
  const auto missing = mgpr({"--model-info", path("no-such-model.pt").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "no-such-model.pt")) << missing.err;
}

}  // namespace
