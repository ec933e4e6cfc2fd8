// The differential key test: for each task, a tiny job, then the same job with one key at
// another valid value; where the journal's results differ, the journal folder (the
// fingerprint) must differ too. The keys the table says leave a result as it is change
// together in one run, which must journal the same results in the same folder. Each run
// reads a good raster and one corrupt part way, so it ends with its journal kept.
// Then the legacy test: a journal under the key of an mgpr that recorded no settings is
// resumed where that key is unchanged.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "mgpr/config.hpp"
#include "mgpr/process.hpp"
#include "resume/tile_journal.hpp"
#include "resume_support.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::test::TempDir;

// The middle blocks of a COG copy overwritten: it opens, and fails in the tile loop.
void write_corrupt_copy(const fs::path& good, const fs::path& corrupt) {
  const auto made = mgpr::run_command({"gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co",
                                       "BLOCKSIZE=128", good.string(), corrupt.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::fstream file(corrupt, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(file.tellg());
  file.seekp(static_cast<std::streamoff>(size * 45 / 100));
  file << std::string(size * 15 / 100, 'Z');
}

// A journal kept by a run: its folder's name and the good raster's (image 0) results.
struct Journaled {
  std::string fingerprint;
  std::map<mgpr::runtime::TileId, std::string> results;
};

class ResumeKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto inputs = dir_.path() / "inputs";
    fs::create_directories(inputs);
    std::vector<std::string> command{
        MGPR_TEST_IMAGE, (inputs / "a.tif").string(), "--width", "128", "--height", "96", "--bands", "3"};
    // Small squares inside one tile's core (0.64 m² and 1.44 m²) and larger ones across tiles.
    for (const auto* square : {"4,4,8", "40,40,12", "70,10,30", "20,60,25"}) {
      command.insert(command.end(), {"--square", square});
    }
    ASSERT_EQ(mgpr::run_command(command).exit_code, 0);
    const auto whole = dir_.path() / "whole.tif";
    ASSERT_EQ(mgpr::run_command({MGPR_TEST_IMAGE, whole.string(), "--size", "256", "--bands", "3"}).exit_code, 0);
    write_corrupt_copy(whole, inputs / "b.tif");
    for (const auto* kind : {"tile-mean", "detector", "segmenter"}) {
      ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, kind, model(kind)}).exit_code, 0);
    }
    ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, "tile-mean", model("other-mean"), "--slow", "1"}).exit_code, 0);
    ASSERT_EQ(mgpr::run_command({MGPR_TEST_MODEL, "last-band", model("crops"), "--card",
                                 R"({"mgpr_card": 1, "task": "classify", "tile_size": 16})"})
                  .exit_code,
              0);
  }

  [[nodiscard]] std::string model(const std::string& name) const { return (dir_.path() / (name + ".pt")).string(); }

  [[nodiscard]] std::vector<std::string> base(const std::string& task) const {
    std::vector<std::string> arguments{
        (dir_.path() / "inputs").string(), "task=" + task, "tile_size=32", "accelerator=cpu", "threads=1", "workers=1"};
    if (task == "classify") arguments.push_back("model=" + model("tile-mean"));
    if (task == "detect") arguments.push_back("model=" + model("detector"));
    if (task == "segment") arguments.insert(arguments.end(), {"model=" + model("segmenter"), "polygons=true"});
    return arguments;
  }

  Journaled run(std::vector<std::string> arguments) {
    const auto output = dir_.path() / ("out-" + std::to_string(++runs_));
    arguments.insert(arguments.begin(), MGPR_BINARY);
    arguments.push_back("output_dir=" + output.string());
    const auto finished = mgpr::test::run(arguments, {}, dir_.path(), std::chrono::seconds(120));
    EXPECT_EQ(finished.code, 1) << "the corrupt raster should fail the run: " << finished.out << finished.err;
    Journaled journaled;
    std::error_code error;
    for (const auto& folder : fs::directory_iterator(output / ".mgpr-journal", error)) {
      journaled.fingerprint = folder.path().filename().string();
      for (auto& [id, payload] : mgpr::runtime::read_journals(folder.path())) {
        if (id.image == 0) journaled.results.emplace(id, payload);
      }
    }
    EXPECT_FALSE(journaled.results.empty()) << finished.out << finished.err;
    return journaled;
  }

  TempDir dir_;
  int runs_ = 0;
};

struct Variation {
  std::string key;
  std::string task;
  std::vector<std::string> overrides;
};

TEST_F(ResumeKeys, ResultsThatDifferNeverShareAJournalFolder) {
  ASSERT_FALSE(HasFailure());
  const std::vector<Variation> variations{
      {"bands", "classify", {"bands=[3,2,1]"}},
      {"scale", "classify", {"scale=0.5"}},
      {"mean", "classify", {"mean=0.25"}},
      {"std", "classify", {"std=2"}},
      {"nodata", "classify", {"nodata=255"}},
      {"tile_size", "classify", {"tile_size=48"}},
      {"overlap", "classify", {"overlap=8"}},
      {"gsd", "classify", {"gsd=0.05"}},
      {"gsd_tolerance", "classify", {"gsd=0.095", "gsd_tolerance=0.01"}},
      {"resample", "classify", {"gsd=0.05", "resample=false"}},
      {"resampling", "classify", {"gsd=0.05", "resampling=nearest"}},
      {"segment_resolution", "segment", {"gsd=0.05", "segment_resolution=raster"}},
      {"model", "classify", {"model=" + model("other-mean")}},
      {"precision", "classify", {"precision=bf16", "force_precision=true"}},
      {"channels_last", "classify", {"channels_last=false"}},
      {"cudnn_benchmark", "classify", {"cudnn_benchmark=true"}},
      {"onednn_fusion", "classify", {"onednn_fusion=true"}},
      {"jit_executor", "segment", {"jit_executor=profiling"}},
      {"score_threshold", "detect", {"score_threshold=1.5"}},
      {"classify_model", "detect", {"classify_model=" + model("crops")}},
      {"crop_margin", "detect", {"classify_model=" + model("crops"), "crop_margin=4"}},
      {"segment_probability", "segment", {"segment_probability=true"}},
      {"polygons", "segment", {"polygons=false"}},
      {"background_class", "segment", {"background_class=-1"}},
      {"min_area", "segment", {"min_area=1"}},
  };
  // Keys declared to leave a result as it is, changed all at once per task.
  const std::vector<std::string> kept{"dummy_dataset_delay=0.001",
                                      "image_size=64",
                                      "sharding=static",
                                      "batch_size=3",
                                      "workers=2",
                                      "threads=2",
                                      "rendezvous_timeout=60",
                                      "peer_timeout=60",
                                      "force_precision=true",
                                      "cpu_forward_tiles=1",
                                      "iou_threshold=0.3",
                                      "class_aware_nms=false",
                                      "cog=true",
                                      "simplify=0.5",
                                      "quicklook=true",
                                      "quicklook_size=64",
                                      "outputs=run",
                                      "output_format=geojson",
                                      "log_interval=1"};
  // Not varied here, and why; a key the table gains must join one of these lists.
  const std::map<std::string, std::string> not_varied{
      {"image_path", "the rasters: the journal's record lists them (run_plan_test)"},
      {"image_glob", "the rasters it selects are image_path's"},
      {"recursive", "the rasters it selects are image_path's"},
      {"use_fake_data", "fake tiles have no raster to fail, so no journal is kept (run_plan_test)"},
      {"dummy_dataset_count", "fake tiles, as use_fake_data"},
      {"dummy_dataset_type", "fake tiles, as use_fake_data"},
      {"task", "each task is a base of its own here, with its own model"},
      {"class_names", "must name the model's classes; names are applied when files are written"},
      {"gpus", "another rank count: the resume tests run two ranks"},
      {"on_rank_loss",
       "continue is refused beside sharding=static, which the kept keys set; it changes which rank does a tile, never "
       "its result (PeerLoss.UnderContinue*)"},
      {"accelerator", "only the CPU here; resolved to the device kind"},
      {"model_libraries", "needs a library of operators (the torchvision suite)"},
      {"resume", "resume=false discards the journal this test reads"},
      {"output_dir", "every run here has its own; the fingerprint leaves it out"},
  };
  std::set<std::string> covered;
  for (const auto& variation : variations) covered.insert(variation.key);
  for (const auto& setting : kept) covered.insert(setting.substr(0, setting.find('=')));
  for (const auto& key : mgpr::config_keys()) {
    EXPECT_TRUE(covered.contains(std::string(key.name)) || not_varied.contains(std::string(key.name)))
        << key.name << " is neither varied by this test nor said why not";
  }

  std::map<std::string, Journaled> bases;
  for (const auto* task : {"classify", "detect", "segment"}) {
    bases[task] = run(base(task));
    auto arguments = base(task);
    arguments.insert(arguments.end(), kept.begin(), kept.end());
    const auto same = run(arguments);
    EXPECT_EQ(same.results, bases[task].results) << task << ": a key declared to keep results changed them";
    EXPECT_EQ(same.fingerprint, bases[task].fingerprint) << task;
  }
  std::set<std::string> differing;
  for (const auto& variation : variations) {
    auto arguments = base(variation.task);
    arguments.insert(arguments.end(), variation.overrides.begin(), variation.overrides.end());
    const auto other = run(arguments);
    const auto& first = bases[variation.task];
    if (other.results != first.results) {
      differing.insert(variation.key);
      EXPECT_NE(other.fingerprint, first.fingerprint) << variation.key << ": other results in the same journal folder";
    }
  }
  // The test sees results: these certainly change them. (channels_last changes the last
  // digits of the tile mean here, the layout reordering its sums: hence its declaration.)
  for (const auto* key : {"tile_size", "min_area", "polygons", "score_threshold"}) {
    EXPECT_TRUE(differing.contains(key)) << key;
  }
}

// e227378's key: the settings line it wrote (precision as typed), the model by path, size
// and modification time, the rasters by path. A journal left under it is taken over.
TEST_F(ResumeKeys, AJournalOfTheUnrecordedKeyIsResumedWhereItIsUnchanged) {
  ASSERT_FALSE(HasFailure());
  const auto output = dir_.path() / "legacy-out";
  auto arguments = base("classify");
  arguments.insert(arguments.begin(), MGPR_BINARY);
  arguments.push_back("output_dir=" + output.string());
  const auto failed = mgpr::test::run(arguments, {}, dir_.path(), std::chrono::seconds(120));
  ASSERT_EQ(failed.code, 1) << failed.out << failed.err;
  std::vector<fs::path> folders;
  for (const auto& folder : fs::directory_iterator(output / ".mgpr-journal")) folders.push_back(folder.path());
  ASSERT_EQ(folders.size(), 1U);
  const auto journaled = mgpr::runtime::read_journals(folders[0]).size();
  ASSERT_GT(journaled, 0U);

  // The folder as that mgpr left it: under its key's name, without a record.
  mgpr::runtime::LegacyJournalKey key;
  key.output_dir = output;
  key.settings =
      "task=classify tile=32 overlap=0 bands= scale=0 mean= std= precision=auto score=0 probability=false "
      "fake=false count=100";
  key.model = model("tile-mean");
  const auto inputs = dir_.path() / "inputs";
  key.rasters = {(inputs / "a.tif").string(), (inputs / "b.tif").string()};
  const auto legacy = mgpr::runtime::legacy_journal_dir(key);
  fs::remove(folders[0] / "settings");
  fs::rename(folders[0], legacy);

  // The corrupt raster replaced by a good one: only what is missing runs.
  fs::copy_file(dir_.path() / "whole.tif", inputs / "b.tif", fs::copy_options::overwrite_existing);
  const auto rerun = mgpr::test::run(arguments, {}, dir_.path(), std::chrono::seconds(120));
  ASSERT_EQ(rerun.code, 0) << rerun.out << rerun.err;
  EXPECT_NE(rerun.out.find("# resuming: "), std::string::npos) << rerun.out;
  EXPECT_NE(rerun.out.find("recorded no settings"), std::string::npos) << rerun.out;
  EXPECT_FALSE(fs::exists(output / ".mgpr-journal"));
}

}  // namespace
