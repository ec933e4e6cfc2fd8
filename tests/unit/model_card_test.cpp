// Model cards (mgpr/model_card.hpp): parsed and checked by name, read from zip archives
// (stored, zip64, and the members that cannot be read), and layered under the config file
// and overrides. The archives here are written byte by byte, as PyTorch's writer lays
// them out, so each case of the reader is reached; tests/runtime/app/model_card_test.cpp
// reads cards LibTorch itself saved.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "mgpr/model_card.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::test::error_of;

void put(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_at(std::string& out, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

struct Member {
  std::string name;
  std::string content;
  std::uint16_t method = 0;  // 0 stored; 8 says deflated (the bytes are not, which the reader never reaches)
};

// A zip archive of `members`; `zip64` writes the sizes and offsets as zip64 records and
// saturates the 32-bit fields, as writers do for archives past 4 GiB.
std::string zip_archive(const std::vector<Member>& members, bool zip64 = false) {
  std::string out;
  std::string directory;
  for (const auto& member : members) {
    const std::uint64_t offset = out.size();
    put(out, 0x04034b50, 4);
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, member.method, 2);
    put(out, 0, 4);  // time and date
    put(out, 0, 4);  // crc: not checked
    put(out, member.content.size(), 4);
    put(out, member.content.size(), 4);
    put(out, member.name.size(), 2);
    put(out, 0, 2);
    out += member.name + member.content;

    std::string extra;
    if (zip64) {
      put(extra, 0x0001, 2);
      put(extra, 24, 2);
      put(extra, member.content.size(), 8);
      put(extra, member.content.size(), 8);
      put(extra, offset, 8);
    }
    put(directory, 0x02014b50, 4);
    put(directory, 45, 2);
    put(directory, 45, 2);
    put(directory, 0, 2);
    put(directory, member.method, 2);
    put(directory, 0, 4);
    put(directory, 0, 4);
    put(directory, zip64 ? 0xffffffffU : member.content.size(), 4);
    put(directory, zip64 ? 0xffffffffU : member.content.size(), 4);
    put(directory, member.name.size(), 2);
    put(directory, extra.size(), 2);
    put(directory, 0, 2);
    put(directory, 0, 2);
    put(directory, 0, 2);
    put(directory, 0, 4);
    put(directory, zip64 ? 0xffffffffU : offset, 4);
    directory += member.name + extra;
  }
  const std::uint64_t directory_at = out.size();
  out += directory;
  if (zip64) {
    const std::uint64_t end64_at = out.size();
    put(out, 0x06064b50, 4);
    put(out, 44, 8);
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, members.size(), 8);
    put(out, members.size(), 8);
    put(out, directory.size(), 8);
    put(out, directory_at, 8);
    put(out, 0x07064b50, 4);
    put(out, 0, 4);
    put(out, end64_at, 8);
    put(out, 1, 4);
  }
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, zip64 ? 0xffff : members.size(), 2);
  put(out, zip64 ? 0xffff : members.size(), 2);
  put(out, zip64 ? 0xffffffffU : directory.size(), 4);
  put(out, zip64 ? 0xffffffffU : directory_at, 4);
  put(out, 0, 2);
  return out;
}

constexpr const char* kCard = R"({
  "mgpr_card": 1,
  "name": "Tree crowns", "version": "1.4.0", "license": "MIT", "source": "https://example.org/trees",
  "task": "detect", "class_names": ["Tree"], "tile_size": 400, "overlap": 40, "gsd": 0.1,
  "score_threshold": 0.1, "iou_threshold": 0.15, "bands": [3, 2, 1], "nodata": 0
})";

class ModelCardTest : public testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    const auto file = dir_.path() / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
  // A model file as torch.jit.save lays it out: members under one top folder, the card
  // among the extra files.
  fs::path model_with_card(const std::string& card, bool zip64 = false) {
    return write("model.pt", zip_archive({{"model/data.pkl", std::string(200, 'p')},
                                          {"model/extra/mgpr.json", card},
                                          {"model/version", "3\n"}},
                                         zip64));
  }
  mgpr::test::TempDir dir_;
};

TEST_F(ModelCardTest, SettingsAndDescriptionAreReadFromTheArchive) {
  for (const bool zip64 : {false, true}) {
    const auto card = mgpr::read_model_card(model_with_card(kCard, zip64));
    ASSERT_TRUE(card.has_value()) << "zip64 " << zip64;
    EXPECT_EQ(card->name, "Tree crowns");
    EXPECT_EQ(card->version, "1.4.0");
    EXPECT_EQ(card->licence, "MIT");
    EXPECT_EQ(card->source, "https://example.org/trees");
    EXPECT_EQ(card->setting_keys, (std::vector<std::string>{"task", "class_names", "tile_size", "overlap", "gsd",
                                                            "score_threshold", "iou_threshold", "bands", "nodata"}));
    mgpr::RunConfig config;
    mgpr::apply_model_card(config, *card);
    EXPECT_EQ(config.task, "detect");
    EXPECT_EQ(config.class_names, std::vector<std::string>{"Tree"});
    EXPECT_EQ(config.tile_size, 400);
    EXPECT_EQ(config.overlap, 40);
    EXPECT_DOUBLE_EQ(config.gsd, 0.1);
    EXPECT_DOUBLE_EQ(config.score_threshold, 0.1);
    EXPECT_DOUBLE_EQ(config.iou_threshold, 0.15);
    EXPECT_EQ(config.bands, (std::vector<int>{3, 2, 1}));
    EXPECT_EQ(config.nodata, "0");
    EXPECT_NE(card->summary().find("Tree crowns 1.4.0 (MIT; https://example.org/trees)"), std::string::npos)
        << card->summary();
  }
}

TEST_F(ModelCardTest, FilesWithoutACardHaveNone) {
  EXPECT_FALSE(mgpr::read_model_card(write("plain.pt", zip_archive({{"plain/data.pkl", "p"}}))).has_value());
  EXPECT_FALSE(mgpr::read_model_card(write("not-a-zip.pt", std::string(5000, 'x'))).has_value());
  EXPECT_FALSE(mgpr::read_model_card(write("empty.pt", "")).has_value());
  EXPECT_FALSE(mgpr::read_model_card(dir_.path() / "missing.pt").has_value());
  // Only the archive's own extra folder holds its card, not a file of that name elsewhere.
  EXPECT_FALSE(mgpr::read_model_card(write("nested.pt", zip_archive({{"m/data/extra/mgpr.json", kCard}}))).has_value());
  EXPECT_FALSE(mgpr::card_of_model("builtin:resnet50").has_value());
}

TEST_F(ModelCardTest, ACardThatCannotBeReadIsNamed) {
  const auto compressed = write("deflated.pt", zip_archive({{"deflated/extra/mgpr.json", kCard, 8}}));
  auto what = error_of<mgpr::UsageError>([&] { mgpr::read_model_card(compressed); });
  EXPECT_NE(what.find("deflated.pt"), std::string::npos) << what;
  EXPECT_NE(what.find("compressed"), std::string::npos) << what;

  // The directory lists more bytes than the file holds: a model copied only in part.
  auto archive = zip_archive({{"cut/extra/mgpr.json", kCard}});
  const auto entry = archive.find(std::string("PK\x01\x02", 4));
  for (const std::size_t field : {entry + 20, entry + 24}) put_at(archive, field, 100000);
  what = error_of<mgpr::UsageError>([&] { mgpr::read_model_card(write("cut.pt", archive)); });
  EXPECT_NE(what.find("cut.pt"), std::string::npos) << what;
  EXPECT_NE(what.find("cut short"), std::string::npos) << what;
}

TEST_F(ModelCardTest, BadCardsAreRefusedByNameAndKey) {
  const struct {
    const char* card;
    const char* expected;
  } cases[] = {
      {R"({"task": "detect", "tile_sise": 400})", "unknown key 'tile_sise'"},
      {R"({"output_dir": "x"})", "the run's choice"},
      {R"({"task": "detection"})", "task must be one of"},
      {R"({"tile_size": 0})", "tile_size must be at least 1"},
      {R"({"gsd": 0})", "gsd is the model's ground resolution"},
      {R"({"gsd": "10cm"})", "gsd is the model's ground resolution"},
      {R"({"class_names": [["a"]]})", "class_names must list numbers or text"},
      {R"({"bands": {"r": 1}})", "bands must be a number"},
      {R"({"mgpr_card": 2})", "newer than this mgpr reads"},
      {R"({"name": 7})", "name must be text"},
      {R"(["task"])", "must be a JSON object"},
      {R"({"task": )", "not valid JSON"},
      // A number past a double's range is the JSON reader's out_of_range, not its
      // parse_error; it too is the card's fault (found by fuzzing: it ended the run with
      // exit 1 and the JSON library's message, naming no card).
      {R"({"gsd": 1e400})", "number overflow"},
      // A whole number past TOML's 64-bit integers was wrapped around to -1 (found by
      // fuzzing); it is now the number the card says, which tile_size must be whole and
      // smaller than.
      {R"({"tile_size": 18446744073709551615})", "tile_size must be a whole number, got 1.8"},
  };
  for (const auto& bad : cases) {
    const auto what = error_of<mgpr::UsageError>([&] { mgpr::parse_model_card(bad.card, "bad.pt"); });
    EXPECT_NE(what.find("the model card in 'bad.pt'"), std::string::npos) << bad.card << " -> " << what;
    EXPECT_NE(what.find(bad.expected), std::string::npos) << bad.card << " -> " << what;
  }
}

TEST_F(ModelCardTest, AWholeNumberPastSixtyFourBitsKeepsItsValue) {
  // JSON readers take whole numbers up to 2^64-1, TOML's integers stop at 2^63-1: such a
  // mean was read as -1 (found by fuzzing), and is now the number the card says.
  const auto card = mgpr::parse_model_card(R"({"mean": [18446744073709551615, 0, 0]})", "big.pt");
  mgpr::RunConfig config;
  mgpr::apply_model_card(config, card);
  EXPECT_EQ(config.mean, (std::vector<double>{18446744073709551615.0, 0, 0}));
}

TEST_F(ModelCardTest, TheConfigFileAndOverridesBeatTheCardAndCfgJobNamesIt) {
  const auto model = model_with_card(kCard);
  const auto config_file = write("run.toml", "overlap = 64\n");
  const std::vector<std::string> arguments{"image.tif", "model=" + model.string(), "score_threshold=0.3"};
  std::optional<mgpr::ModelCard> card;
  const auto config = mgpr::resolve_config(config_file, arguments, &card);
  ASSERT_TRUE(card.has_value());
  EXPECT_EQ(config.tile_size, 400);               // the card's
  EXPECT_EQ(config.overlap, 64);                  // the file's over the card's 40
  EXPECT_DOUBLE_EQ(config.score_threshold, 0.3);  // the override's over the card's 0.1
  EXPECT_EQ(config.task, "detect");

  const auto shown = mgpr::describe_resolved_config(config_file, arguments);
  const std::string card_origin = "# model card in " + model.string();
  EXPECT_NE(shown.find("tile_size = 400  " + card_origin), std::string::npos) << shown;
  EXPECT_NE(shown.find("gsd = 0.1  " + card_origin), std::string::npos) << shown;
  EXPECT_NE(shown.find("overlap = 64  # file"), std::string::npos) << shown;
  EXPECT_NE(shown.find("score_threshold = 0.3  # override"), std::string::npos) << shown;

  // Without the model the same arguments are mgpr's defaults.
  const auto plain = mgpr::resolve_config({}, std::vector<std::string>{"image.tif"});
  EXPECT_EQ(plain.tile_size, 1024);
  EXPECT_EQ(plain.task, "classify");
}

TEST_F(ModelCardTest, ModelInfoListsTheSettingsAsTomlAndWhatTheyDo) {
  const auto model = model_with_card(kCard);
  const auto text = mgpr::describe_model_card(model, mgpr::read_model_card(model));
  for (const char* line :
       {"name: Tree crowns\n", "licence: MIT\n", "task = 'detect'\n", "class_names = [ 'Tree' ]\n", "tile_size = 400\n",
        "gsd = 0.1\n", "bands = [ 3, 2, 1 ]\n", "labels are named in the outputs: 0 Tree",
        "40 m and 4 m on the ground at 0.1 m per pixel", "read resampled to it"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }
  const auto none = mgpr::describe_model_card("plain.pt", std::nullopt);
  EXPECT_NE(none.find("card: none"), std::string::npos) << none;
}

}  // namespace
