// The run plan: the configuration and the machine resolved once into each stage's own
// options, with the choices typed, the journal's folder computed once and one count of
// the tiles in memory.
#include "app/run_plan.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>

#include <filesystem>
#include <fstream>

#include "mgpr/config.hpp"
#include "mgpr/error.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace rt = mgpr::runtime;

mgpr::RunConfig fake_cpu_run() {
  mgpr::RunConfig config;
  config.use_fake_data = true;
  config.accelerator = "cpu";
  return config;
}

TEST(RunPlan, EachStageGetsItsOwnOptionsFromTheConfiguration) {
  auto config = fake_cpu_run();
  config.dummy_dataset_count = 7;
  config.dummy_dataset_delay = 0.25;
  config.tile_size = 256;
  config.overlap = 16;
  config.batch_size = 8;
  config.workers = 3;
  config.threads = 5;
  config.sharding = "static";
  config.precision = "fp32";
  config.score_threshold = 0.4;
  config.output_format = "shp";
  config.rendezvous_timeout = 42;
  config.peer_timeout = 17;
  config.log_interval = 0;
  config.resume = false;
  const auto plan = rt::make_run_plan(config, mgpr::RankEnvironment{});

  EXPECT_EQ(plan.threads, 5);
  EXPECT_FALSE(plan.device.is_cuda);
  ASSERT_TRUE(plan.source.fake.has_value());
  EXPECT_EQ(plan.source.fake->count, 7);
  EXPECT_DOUBLE_EQ(plan.source.fake->delay_s, 0.25);
  EXPECT_EQ(plan.source.tile_size, 256);
  EXPECT_EQ(plan.source.overlap, 16);
  EXPECT_EQ(plan.model.tile_size, 256);
  EXPECT_EQ(plan.model.model, "builtin:resnet50");
  EXPECT_EQ(plan.output.task, mgpr::Task::kClassify);
  EXPECT_EQ(plan.output.overlap, 16);
  EXPECT_DOUBLE_EQ(plan.output.score_threshold, 0.4);
  EXPECT_EQ(plan.output.format, mgpr::OutputFormat::kShapefile);
  EXPECT_EQ(plan.sharding, mgpr::Sharding::kStatic);
  EXPECT_EQ(plan.in_flight.batch_size, 8);
  EXPECT_EQ(plan.in_flight.workers, 3);
  EXPECT_EQ(plan.in_flight.batches_read_ahead, 1) << "a CPU reads one batch ahead";
  EXPECT_EQ(plan.rendezvous.timeout, std::chrono::seconds(42));
  EXPECT_EQ(plan.rendezvous.peer_timeout, std::chrono::seconds(17));
  EXPECT_FALSE(plan.rendezvous.use_gpu);
  EXPECT_EQ(plan.log_interval, 0);
  EXPECT_FALSE(plan.resume);
  ASSERT_EQ(plan.execution.size(), 1U);
  EXPECT_EQ(plan.execution.front().precision, mgpr::Precision::kFp32);
  EXPECT_FALSE(plan.execution.front().automatic);
}

// dummy_dataset_type reaches the fake source, whose integer tiles then travel raw as a
// Byte or UInt16 raster's do (raw samples are on for every run).
TEST(RunPlan, TheFakeDataTypeMakesFakeTilesTravelRaw) {
  auto config = fake_cpu_run();
  EXPECT_EQ(rt::make_run_plan(config, mgpr::RankEnvironment{}).source.fake->sample, std::nullopt);
  config.dummy_dataset_type = "uint16";
  const auto plan = rt::make_run_plan(config, mgpr::RankEnvironment{});
  ASSERT_TRUE(plan.source.fake.has_value());
  EXPECT_EQ(plan.source.fake->sample, rt::RawSample::kUInt16);
  EXPECT_TRUE(plan.source.raw_samples);
}

// The budget counts the tiles as this run's source hands them on: a batch_size whose Byte
// tiles fit runs where float32 tiles of the same size are refused, and on a CPU the float32
// copy of one forward pass is counted beside the raw slots.
TEST(RunPlan, TheMemoryBudgetCountsTheTilesAsTheSourceHandsThemOn) {
  auto config = fake_cpu_run();
  config.tile_size = 512;
  config.batch_size = 64;
  const auto float_plan = rt::make_run_plan(config, mgpr::RankEnvironment{});
  const auto float_source = rt::make_tile_source(float_plan.source);
  ASSERT_FALSE(float_source->raw_scaling().has_value());
  const int channels = float_source->channels();
  const auto limit = rt::pipeline_host_bytes(float_plan.in_flight, {512, channels}) - 1;

  config.dummy_dataset_type = "uint8";
  const auto byte_plan = rt::make_run_plan(config, mgpr::RankEnvironment{});
  const auto byte_source = rt::make_tile_source(byte_plan.source);
  ASSERT_TRUE(byte_source->raw_scaling().has_value());
  EXPECT_NO_THROW(rt::check_run_fits(byte_plan, *byte_source, limit));
  try {
    rt::check_run_fits(float_plan, *float_source, limit);
    ADD_FAILURE() << "float32 tiles fit where only Byte tiles do";
  } catch (const mgpr::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("batch_size=64 with tile_size=512"), std::string::npos) << error.what();
  }

  const int pass = byte_plan.execution.front().forward_tiles;
  ASSERT_GT(pass, 0);
  ASSERT_LT(pass, 64);
  const auto byte_needed = rt::pipeline_host_bytes(byte_plan.in_flight, {512, channels, rt::RawSample::kUInt8, pass});
  EXPECT_GT(byte_needed, rt::pipeline_host_bytes(byte_plan.in_flight, {512, channels, rt::RawSample::kUInt8}));
  EXPECT_NO_THROW(rt::check_run_fits(byte_plan, *byte_source, byte_needed));
  EXPECT_THROW(rt::check_run_fits(byte_plan, *byte_source, byte_needed - 1), mgpr::UsageError);
}

// The folder an mgpr that recorded no settings would use: the same name as every release
// before, so a run interrupted under one is found and resumed (resume/run_journal.hpp).
TEST(RunPlan, TheLegacyJournalFolderKeepsItsFingerprint) {
  const auto plan = rt::make_run_plan(fake_cpu_run(), mgpr::RankEnvironment{});
  EXPECT_EQ(plan.legacy_journal_folder, fs::path("mgpr_output") / ".mgpr-journal" / "66611244b12ac01d");
  EXPECT_NE(plan.journal_folder, plan.legacy_journal_folder);
}

fs::path journal_folder_of(const mgpr::RunConfig& config) {
  return rt::make_run_plan(config, mgpr::RankEnvironment{}).journal_folder;
}

TEST(RunPlan, OnlyWhatChangesATilesResultChangesTheJournalFolder) {
  auto config = fake_cpu_run();
  const auto first = journal_folder_of(config);
  config.tile_size = 512;
  EXPECT_NE(journal_folder_of(config), first);
  config.tile_size = 1024;
  config.min_area = 100;  // drops small regions before a tile's result is journaled
  EXPECT_NE(journal_folder_of(config), first);
  config.min_area = 0;
  config.iou_threshold = 0.3;    // merging happens at the end, from the journaled boxes
  config.output_format = "fgb";  // so is writing the files
  config.workers = 7;
  config.sharding = "static";
  config.simplify = 2;
  EXPECT_EQ(journal_folder_of(config), first);
}

TEST(RunPlan, TheNodataRuleChangesTheJournalFolder) {
  auto config = fake_cpu_run();
  const auto first = journal_folder_of(config);
  config.nodata = "none";
  EXPECT_NE(journal_folder_of(config), first);
  EXPECT_EQ(rt::make_run_plan(config, mgpr::RankEnvironment{}).source.nodata.kind, mgpr::NodataRule::Kind::kNone);
}

std::string setting(const rt::RunPlan& plan, std::string_view name) {
  for (const auto& [key, value] : plan.journal_settings) {
    if (key == name) return value;
  }
  return "(absent)";
}

// The journal holds what the run computes with, not what was typed: precision=auto as
// the precision it became here, the device, the model's content, LibTorch's version.
TEST(RunPlan, TheJournalSettingsAreResolved) {
  auto config = fake_cpu_run();
  const auto automatic = rt::make_run_plan(config, mgpr::RankEnvironment{});
  const auto resolved = setting(automatic, "precision");
  EXPECT_TRUE(resolved.starts_with(std::string(rt::precision_name(automatic.execution.front())))) << resolved;
  EXPECT_EQ(setting(automatic, "accelerator"), "cpu");
  EXPECT_EQ(setting(automatic, "model"), "builtin:resnet50");
  EXPECT_EQ(setting(automatic, "classify_model"), "none");
  EXPECT_NE(setting(automatic, "libtorch"), "(absent)");
  EXPECT_EQ(setting(automatic, "min_area"), "0");
  EXPECT_EQ(setting(automatic, "workers"), "(absent)");
  config.precision = "fp32";
  const auto fp32 = rt::make_run_plan(config, mgpr::RankEnvironment{});
  EXPECT_EQ(setting(fp32, "precision"), "fp32");
  // Where auto becomes fp32, typing fp32 is the same run.
  EXPECT_EQ(fp32.journal_folder == automatic.journal_folder, resolved == "fp32");
}

// A model enters by its content: the same weights under another name are the same run,
// other weights under the same name another.
TEST(RunPlan, AModelEntersTheJournalByItsContent) {
  const mgpr::test::TempDir dir;
  std::ofstream(dir.file("a.pt")) << "weights";
  std::ofstream(dir.file("b.pt")) << "weights";
  auto config = fake_cpu_run();
  config.model = dir.file("a.pt");
  const auto first = journal_folder_of(config);
  config.model = dir.file("b.pt");
  EXPECT_EQ(journal_folder_of(config), first);
  std::ofstream(dir.file("b.pt")) << "other weights";
  EXPECT_NE(journal_folder_of(config), first);
}

// A folder is listed once, here; its rasters (not the folder's name) make the journal
// folder, so a tile added to the folder is a new run, not a resume of the old one.
TEST(RunPlan, InputsAreExpandedOnceAndTheirRastersKeyTheJournal) {
  const mgpr::test::TempDir dir;
  std::ofstream(dir.file("b.tif")) << "x";
  std::ofstream(dir.file("a.tif")) << "x";
  mgpr::RunConfig config;
  config.accelerator = "cpu";
  config.image_path = {dir.path().string()};
  const auto plan = rt::make_run_plan(config, mgpr::RankEnvironment{});
  EXPECT_EQ(plan.source.rasters, (std::vector<std::string>{dir.file("a.tif"), dir.file("b.tif")}));
  std::ofstream(dir.file("c.tif")) << "x";
  EXPECT_NE(rt::make_run_plan(config, mgpr::RankEnvironment{}).journal_folder, plan.journal_folder);
}

// In a run of several ranks the plan takes the list rank 0 froze (expand_inputs_once)
// and lists nothing itself: a tile added since does not enter this rank's plan.
TEST(RunPlan, ARankOfSeveralTakesTheFrozenInputsAndNeverListsThem) {
  const mgpr::test::TempDir dir;
  std::ofstream(dir.file("a.tif")) << "x";
  mgpr::RunConfig config;
  config.accelerator = "cpu";
  config.image_path = {dir.path().string()};
  mgpr::RankEnvironment rank1;
  rank1.rank = 1;
  rank1.world_size = 2;
  std::ofstream(dir.file("b.tif")) << "x";
  const std::vector<std::string> frozen{dir.file("a.tif")};
  const auto plan = rt::make_run_plan(config, rank1, std::nullopt, frozen);
  EXPECT_EQ(plan.source.rasters, frozen);
  mgpr::RankEnvironment one;
  EXPECT_EQ(plan.journal_folder, rt::make_run_plan(config, one, std::nullopt, frozen).journal_folder)
      << "the journal's key is the frozen list, whoever holds it";
  EXPECT_THROW(rt::make_run_plan(config, rank1), std::logic_error);
}

TEST(RunPlan, ThreadsDefaultToTheCpusSlurmGaveTheTask) {
  auto config = fake_cpu_run();
  ::setenv("SLURM_CPUS_PER_TASK", "3", 1);
  EXPECT_EQ(rt::make_run_plan(config, mgpr::RankEnvironment{}).threads, 3);
  ::setenv("SLURM_CPUS_PER_TASK", "many", 1);  // not a number: the CPUs decide
  EXPECT_GE(rt::make_run_plan(config, mgpr::RankEnvironment{}).threads, 1);
  ::unsetenv("SLURM_CPUS_PER_TASK");
}

TEST(RunPlan, APrecisionTheDeviceCannotRunIsRefusedWhenThePlanIsMade) {
  auto config = fake_cpu_run();
  config.precision = "fp16";
  try {
    (void)rt::make_run_plan(config, mgpr::RankEnvironment{});
    ADD_FAILURE() << "fp16 on a CPU was planned";
  } catch (const mgpr::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("precision=fp16"), std::string::npos) << error.what();
  }
}

}  // namespace
