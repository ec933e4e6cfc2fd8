#include "mgpr/config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "mgpr/error.hpp"
#include "mgpr/run_choices.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

namespace {

using mgpr::test::error_of;

TEST(Config, DefaultsMatchTheOriginalProjectKeys) {
  const mgpr::RunConfig config;
  for (const char* key : {"image_path", "tile_size", "batch_size", "gpus", "accelerator", "workers", "precision",
                          "log_interval", "use_fake_data", "dummy_dataset_delay", "dummy_dataset_count", "image_size",
                          "model", "task", "overlap", "output_dir", "threads", "bands"}) {
    EXPECT_NE(mgpr::find_config_key(key), nullptr) << key;
  }
  EXPECT_FALSE(config.use_fake_data);
  EXPECT_EQ(config.model, "builtin:resnet50");
}

// The resume fingerprint is made from these declarations (runtime/app/run_plan.cpp): a
// key that declares nothing could change a tile's result and be left out of it.
TEST(Config, EveryKeyDeclaresWhetherItChangesATilesResult) {
  for (const auto& key : mgpr::config_keys()) {
    EXPECT_NE(key.effect, mgpr::TileResultEffect::kUndeclared) << key.name;
  }
  const auto effect_of = [](std::string_view name) { return mgpr::find_config_key(name)->effect; };
  EXPECT_EQ(effect_of("min_area"), mgpr::TileResultEffect::kChanges);
  EXPECT_EQ(effect_of("precision"), mgpr::TileResultEffect::kResolved);
  EXPECT_EQ(effect_of("classify_model"), mgpr::TileResultEffect::kResolved);
  EXPECT_EQ(effect_of("workers"), mgpr::TileResultEffect::kKeeps);
}

TEST(Config, ValuesAsPlainText) {
  mgpr::RunConfig config;
  config.min_area = 100;
  config.mean = {0.5, 0.25};
  config.bands = {3, 2, 1};
  const auto text = [&](std::string_view name) {
    return mgpr::config_value_text(config, *mgpr::find_config_key(name));
  };
  EXPECT_EQ(text("min_area"), "100");
  EXPECT_EQ(text("mean"), "0.5,0.25");
  EXPECT_EQ(text("bands"), "3,2,1");
  EXPECT_EQ(text("polygons"), "false");
  EXPECT_EQ(text("task"), "classify");
}

TEST(Config, OverridesOfEveryType) {
  mgpr::RunConfig config;
  mgpr::apply_override(config, "use_fake_data=true");
  mgpr::apply_override(config, "dummy_dataset_count=64");
  mgpr::apply_override(config, "tile_size=256");
  mgpr::apply_override(config, "dummy_dataset_delay=0.25");
  mgpr::apply_override(config, "precision=fp16");
  mgpr::apply_override(config, "bands=4,3,2");
  mgpr::apply_override(config, "image_path=a.tif,b.tif");
  EXPECT_TRUE(config.use_fake_data);
  EXPECT_EQ(config.dummy_dataset_count, 64);
  EXPECT_EQ(config.tile_size, 256);
  EXPECT_DOUBLE_EQ(config.dummy_dataset_delay, 0.25);
  EXPECT_EQ(config.precision, "fp16");
  EXPECT_EQ(config.bands, (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(config.image_path, (std::vector<std::string>{"a.tif", "b.tif"}));
}

TEST(Config, HydraOverrideGrammarAsMultigpuRasterUsersTypeIt) {
  mgpr::RunConfig config;
  mgpr::apply_override(config, "bands=[1,2,3]");
  mgpr::apply_override(config, "mean=[0.485, 0.456, 0.406]");
  mgpr::apply_override(config, "image_path=['my scans/a,1.tif', \"b.tif\"]");
  mgpr::apply_override(config, "output_dir='results, run 2'");
  mgpr::apply_override(config, "+tile_size=512");
  mgpr::apply_override(config, "++batch_size=16");
  EXPECT_EQ(config.bands, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(config.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(config.image_path, (std::vector<std::string>{"my scans/a,1.tif", "b.tif"}));
  EXPECT_EQ(config.output_dir, "results, run 2");
  mgpr::apply_override(config, "model=' spaced name.pt '");
  EXPECT_EQ(config.model, " spaced name.pt ") << "quotes keep their spaces";
  EXPECT_EQ(config.tile_size, 512);
  EXPECT_EQ(config.batch_size, 16);

  const mgpr::RunConfig defaults;
  mgpr::apply_override(config, "bands=null");
  mgpr::apply_override(config, "~tile_size");
  mgpr::apply_override(config, "~batch_size=16");
  mgpr::apply_override(config, "mean=[]");
  EXPECT_EQ(config.bands, defaults.bands);
  EXPECT_EQ(config.tile_size, defaults.tile_size);
  EXPECT_EQ(config.batch_size, defaults.batch_size);
  EXPECT_TRUE(config.mean.empty());

  EXPECT_TRUE(mgpr::looks_like_override("~tile_size"));
  EXPECT_TRUE(mgpr::looks_like_override("+bands=[1,2]"));
  EXPECT_FALSE(mgpr::looks_like_override("~/scans/a.tif"));
  EXPECT_FALSE(mgpr::looks_like_override("./a=b.tif"));
  const std::vector<std::string> arguments{"+bands=[3,2,1]", "a.tif", "~workers"};
  const auto resolved = mgpr::resolve_config({}, arguments);
  EXPECT_EQ(resolved.bands, (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(resolved.image_path, (std::vector<std::string>{"a.tif"}));
}

TEST(Config, HydraFormsThatCannotWorkAreRefusedWithTheFix) {
  mgpr::RunConfig config;
  const auto unclosed_bracket = error_of([&] { mgpr::apply_override(config, "bands=[1,2"); });
  EXPECT_NE(unclosed_bracket.find("override 'bands=[1,2': unclosed '['"), std::string::npos) << unclosed_bracket;
  const auto unclosed_quote = error_of([&] { mgpr::apply_override(config, "output_dir='a b"); });
  EXPECT_NE(unclosed_quote.find("unclosed quote"), std::string::npos) << unclosed_quote;
  const auto nested = error_of([&] { mgpr::apply_override(config, "bands=[[1,2]]"); });
  EXPECT_NE(nested.find("lists inside lists"), std::string::npos) << nested;
  const auto list_for_number = error_of([&] { mgpr::apply_override(config, "tile_size=[512]"); });
  EXPECT_NE(list_for_number.find("tile_size must be a whole number, got '[512]'"), std::string::npos)
      << list_for_number;
  const auto wrong_item = error_of([&] { mgpr::apply_override(config, "bands=[1,x]"); });
  EXPECT_NE(wrong_item.find("bands must be a list of whole numbers"), std::string::npos) << wrong_item;
  const auto unknown = error_of([&] { mgpr::apply_override(config, "~tile_sise"); });
  EXPECT_NE(unknown.find("did you mean tile_size"), std::string::npos) << unknown;
  EXPECT_EQ(config, mgpr::RunConfig{}) << "a rejected override must not change the config";
}

TEST(Config, NumberListsForScaling) {
  mgpr::RunConfig config;
  mgpr::apply_override(config, "mean=0.5,1,-0.25");
  mgpr::apply_override(config, "scale=0.0039");
  EXPECT_EQ(config.mean, (std::vector<double>{0.5, 1.0, -0.25}));
  EXPECT_DOUBLE_EQ(config.scale, 0.0039);
  mgpr::apply_toml_text(config, "std = [0.2, 3]\n", "scaling.toml");
  EXPECT_EQ(config.std, (std::vector<double>{0.2, 3.0}));
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "mean=1,x"); }).find("mean must be a list of numbers"),
            std::string::npos);
  const std::vector<std::string> zero_std{"a.tif", "std=1,0"};
  EXPECT_NE(error_of([&] { mgpr::resolve_config({}, zero_std); }).find("must be positive"), std::string::npos);
}

TEST(Config, UnknownKeyNamesNearestKeys) {
  mgpr::RunConfig config;
  const auto message = error_of([&] { mgpr::apply_override(config, "tile_sise=512"); });
  EXPECT_NE(message.find("override 'tile_sise=512'"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown key 'tile_sise'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean tile_size"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "batchsize=3"); }).find("batch_size"), std::string::npos);
}

TEST(Config, BadValuesNameKeyAndExpectation) {
  mgpr::RunConfig config;
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "tile_size=big"); }).find("tile_size must be a whole number"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "tile_size=0"); }).find("at least 1"), std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "precision=fp8"); }).find("one of auto, fp32, fp16, bf16"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "use_fake_data=maybe"); }).find("true or false"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "bands=0"); }).find("numbered from 1"), std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "tile_size"); }).find("expected key=value"), std::string::npos);
  EXPECT_EQ(config, mgpr::RunConfig{}) << "a rejected override must not change the config";
}

// jit_executor= takes the executor's names; a wrong one is refused naming the key, the
// values it takes and what was given, and leaves the config as it was.
TEST(Config, JitExecutorTakesItsNamesAndRefusesOthers) {
  mgpr::RunConfig config;
  EXPECT_EQ(config.jit_executor, "auto");
  for (const char* name : {"simple", "profiling", "profiling_no_fuser", "auto"}) {
    mgpr::apply_override(config, std::string("jit_executor=") + name);
    EXPECT_EQ(config.jit_executor, name);
    EXPECT_EQ(mgpr::name_of(mgpr::parse_jit_executor(name)), name);
  }
  const auto message = error_of([&] { mgpr::apply_override(config, "jit_executor=nvfuser"); });
  EXPECT_NE(message.find("jit_executor must be one of auto, simple, profiling, profiling_no_fuser, got 'nvfuser'"),
            std::string::npos)
      << message;
  EXPECT_EQ(config, mgpr::RunConfig{}) << "a rejected override must not change the config";
  mgpr::apply_toml_text(config, "jit_executor = 'profiling'\n", "config.toml");
  EXPECT_EQ(config.jit_executor, "profiling");
  EXPECT_NE(error_of([] {
              (void)mgpr::parse_jit_executor("fast");
            }).find("jit_executor=fast is not one of auto, simple, profiling, profiling_no_fuser"),
            std::string::npos);
}

TEST(Config, TomlFileAndErrorsWithLineNumbers) {
  mgpr::RunConfig config;
  mgpr::apply_toml_text(config, "tile_size = 512\nbatch_size = 8\nimage_path = 'one.tif'\ndummy_dataset_delay = 1\n",
                        "run.toml");
  EXPECT_EQ(config.tile_size, 512);
  EXPECT_EQ(config.batch_size, 8);
  EXPECT_EQ(config.image_path, (std::vector<std::string>{"one.tif"}));
  EXPECT_DOUBLE_EQ(config.dummy_dataset_delay, 1.0);

  const auto unknown = error_of([&] { mgpr::apply_toml_text(config, "\n\nworkerz = 3\n", "run.toml"); });
  EXPECT_NE(unknown.find("run.toml:3"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("did you mean workers"), std::string::npos) << unknown;
  const auto wrong_type = error_of([&] { mgpr::apply_toml_text(config, "tile_size = '512'\n", "run.toml"); });
  EXPECT_NE(wrong_type.find("tile_size must be a whole number"), std::string::npos) << wrong_type;
  const auto broken = error_of([&] { mgpr::apply_toml_text(config, "tile_size = = 3\n", "run.toml"); });
  EXPECT_NE(broken.find("run.toml:1"), std::string::npos) << broken;
  EXPECT_NE(broken.find("not valid TOML"), std::string::npos) << broken;
}

TEST(Config, MissingFileIsNamed) {
  mgpr::RunConfig config;
  const auto message = error_of([&] { mgpr::apply_toml_file(config, "/nonexistent/run.toml"); });
  EXPECT_NE(message.find("'/nonexistent/run.toml' cannot be read"), std::string::npos) << message;
}

// Values that would run wrongly or hang are refused, naming the key.
TEST(Config, NanThresholdsAndThreadsBeyondAnyNodeAreRefused) {
  mgpr::RunConfig config;
  for (const char* bad : {"iou_threshold=nan", "score_threshold=nan", "score_threshold=inf", "mean=[0.5,nan,0.5]"}) {
    const auto message = error_of([&] { mgpr::apply_override(config, bad); });
    EXPECT_NE(message.find("finite"), std::string::npos) << bad << ": " << message;
  }
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "threads=100000"); }).find("threads must be at most 1024"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "workers=5000"); }).find("workers must be at most"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "batch_size=1000000"); }).find("batch_size must be at most"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { mgpr::apply_override(config, "threads=64"); }), "no error");
}

TEST(Config, AnEmptyOutputDirIsRefusedBeforeAnyTile) {
  const std::vector<std::string> arguments{"use_fake_data=true", "output_dir="};
  const auto message = error_of([&] { mgpr::resolve_config({}, arguments); });
  EXPECT_NE(message.find("output_dir is empty"), std::string::npos) << message;
}

TEST(Config, AFolderGivenAsTheConfigFileIsRefused) {
  const mgpr::test::TempDir dir("mgpr-config-");
  const auto message = error_of([&] { mgpr::resolve_config(dir.path(), {}); });
  EXPECT_NE(message.find("config file '" + dir.path().string() + "' is a folder"), std::string::npos) << message;
}

TEST(Config, TomlRoundTripKeepsHostileStrings) {
  mgpr::RunConfig config;
  config.image_path = {"with space.tif", "quote'\"s.tif", "$(touch x)`y`.tif", "new\nline.tif", "-dash.tif"};
  config.bands = {1, 3};
  config.mean = {0.485, 0.456, 0.406};
  config.std = {0.25};
  config.dummy_dataset_delay = 0.125;
  config.use_fake_data = true;
  mgpr::RunConfig reread;
  mgpr::apply_toml_text(reread, mgpr::to_toml(config), "round-trip");
  EXPECT_EQ(reread, config);
}

TEST(Config, ResolveSplitsRastersFromOverrides) {
  const std::vector<std::string> arguments{"a.tif", "tile_size=256", "./x=1.tif", "batch_size=2"};
  const auto config = mgpr::resolve_config({}, arguments);
  EXPECT_EQ(config.image_path, (std::vector<std::string>{"a.tif", "./x=1.tif"}));
  EXPECT_EQ(config.tile_size, 256);
  EXPECT_EQ(config.batch_size, 2);
}

TEST(Config, ValidateChecksAcrossKeys) {
  const std::vector<std::string> overlap{"a.tif", "tile_size=256", "overlap=256"};
  EXPECT_NE(error_of([&] { mgpr::resolve_config({}, overlap); }).find("overlap (256) must be smaller"),
            std::string::npos);
  EXPECT_NE(error_of([&] { mgpr::resolve_config({}, {}); }).find("use_fake_data=true"), std::string::npos);
  const std::vector<std::string> huge{"a.tif", "tile_size=100000"};
  EXPECT_NE(error_of([&] { mgpr::resolve_config({}, huge); }).find("tile_size=100000 is too large"), std::string::npos);
  const std::vector<std::string> zero{"a.tif", "tile_size=0"};
  EXPECT_NE(error_of([&] { mgpr::resolve_config({}, zero); }).find("tile_size must be at least 1"), std::string::npos);
  const std::vector<std::string> fake{"use_fake_data=true"};
  EXPECT_NO_THROW(mgpr::resolve_config({}, fake));
}

// Found by fuzzing: a value that is not UTF-8 came back from the job's config.toml as
// other characters (the job then read another path); it is refused, by name.
TEST(Config, AValueThatIsNotUtf8IsRefusedBeforeItReachesTheJob) {
  mgpr::RunConfig config;
  const auto error = error_of([&] { mgpr::apply_override(config, "image_path=latin1-\xFF.tif"); });
  EXPECT_NE(error.find("image_path is not valid UTF-8"), std::string::npos) << error;
  EXPECT_NE(error.find("Rename the file"), std::string::npos) << error;
  EXPECT_NE(error_of([&] { mgpr::apply_override(config, "output_dir=out-\xFF"); }), "no error");
  mgpr::apply_override(config, "output_dir=for\xC3\xAAt");
  EXPECT_EQ(config.output_dir, "for\xC3\xAAt");
}

TEST(Config, HelpListsEveryKey) {
  const auto help = mgpr::describe_config_keys();
  for (const auto& key : mgpr::config_keys()) EXPECT_NE(help.find(key.name), std::string::npos) << key.name;
}

}  // namespace

// Keys and values spelt as multigpu_raster, Lightning or DeepForest spell them
// are refused with mgpr's name for the same thing, even where no spelling is close.
TEST(Config, ForeignKeysAndValuesAreRefusedWithMgprsName) {
  mgpr::RunConfig config;
  const std::vector<std::pair<std::string, std::string>> keys{{"input_path=a.tif", "image_path"},
                                                              {"devices=2", "gpus"},
                                                              {"num_gpus=2", "gpus"},
                                                              {"patch_size=400", "tile_size"},
                                                              {"score_thresh=0.1", "score_threshold"},
                                                              {"num_workers=4", "workers"},
                                                              {"+devices=2", "gpus"}};
  for (const auto& [override_text, mgpr_key] : keys) {
    const auto error = error_of([&] { mgpr::apply_override(config, override_text); });
    EXPECT_NE(error.find("mgpr's is " + mgpr_key), std::string::npos) << override_text << ": " << error;
  }
  const std::vector<std::pair<std::string, std::string>> values{{"precision=16-mixed", "precision=fp16"},
                                                                {"precision=bf16-mixed", "precision=bf16"},
                                                                {"precision=32", "precision=fp32"},
                                                                {"accelerator=cuda", "accelerator=gpu"}};
  for (const auto& [override_text, mgpr_value] : values) {
    const auto error = error_of([&] { mgpr::apply_override(config, override_text); });
    EXPECT_NE(error.find("mgpr's is " + mgpr_value), std::string::npos) << override_text << ": " << error;
  }
  // Nothing foreign is taken: the configuration is as it was.
  EXPECT_EQ(config, mgpr::RunConfig{});
  // A config file says the same.
  EXPECT_NE(error_of([&] { mgpr::apply_toml_text(config, "devices = 2\n", "job.toml"); }).find("mgpr's is gpus"),
            std::string::npos);
}

// Hydra's `--cfg job`, each value with where it came from.
TEST(Config, TheResolvedConfigurationSaysWhereEachValueCameFrom) {
  mgpr::test::TempDir dir;
  const auto file = dir.path() / "run.toml";
  std::ofstream(file) << "tile_size = 256\nbatch_size = 4\n";
  const std::vector<std::string> arguments{"a.tif", "batch_size=8", "~overlap"};
  const auto text = mgpr::describe_resolved_config(file, arguments);
  const auto line_of = [&](const std::string& key) {
    const std::string lines = "\n" + text;
    const auto start = lines.find("\n" + key + " = ");
    if (start == std::string::npos) return std::string("(no line)");
    return lines.substr(start + 1, lines.find('\n', start + 1) - start - 1);
  };
  EXPECT_EQ(line_of("tile_size"), "tile_size = 256  # file " + file.string() + ":1");
  EXPECT_EQ(line_of("batch_size"), "batch_size = 8  # override 'batch_size=8'");
  EXPECT_EQ(line_of("overlap"), "overlap = 0  # default, by override '~overlap'");
  EXPECT_EQ(line_of("image_path"), "image_path = [ 'a.tif' ]  # arguments");
  EXPECT_EQ(line_of("task"), "task = 'classify'  # default");
  // Every key is listed once.
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), mgpr::config_keys().size());
}
