// The tasks' final files for many rasters (issue 32): outputs=run writes one CSV and one
// GeoPackage for the run (results with the raster's name, a `rasters` layer of footprints
// with each raster's status), grouped by CRS; a raster that failed is listed with its
// reason and gets no results, in either layout. Real GeoTIFFs opened by the real source;
// the results are what ranks would have gathered (journal lines), and the files are read
// back with GDAL/OGR.
#include <gdal_priv.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "source/tile_source.hpp"
#include "support/rasters.hpp"
#include "support/temp_dir.hpp"
#include "tasks/task_output.hpp"

namespace {

namespace fs = std::filesystem;
using mgpr::OutputLayout;
using mgpr::Task;
using mgpr::runtime::OutputPlan;
using mgpr::runtime::RasterFailures;
using mgpr::runtime::TaskOptions;
using mgpr::runtime::TileResults;
using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::UnorderedElementsAre;

constexpr int kTile = 64;

// A 128 x 96 GeoTIFF (2 x 2 tiles of 64) in EPSG:32633, or in `epsg` when given; 0: no
// georeferencing at all (no geotransform, no CRS).
std::string raster(const TempDir& scratch, const std::string& name, int epsg = 32633, int width = 128,
                   int height = 96) {
  fs::create_directories(scratch.path() / "in");
  const auto path = (scratch.path() / "in" / name).string();
  mgpr::test::RasterSpec spec;
  spec.width = width;
  spec.height = height;
  spec.bands = 1;
  if (epsg == 0) {
    GDALAllRegister();
    GDALDatasetUniquePtr dataset(
        GetGDALDriverManager()->GetDriverByName("GTiff")->Create(path.c_str(), width, height, 1, GDT_Byte, nullptr));
    if (!dataset) throw std::runtime_error("cannot create " + path);
    return path;
  }
  mgpr::test::write_raster(path, spec);
  if (epsg != 32633) {
    GDALDatasetUniquePtr dataset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_UPDATE));
    OGRSpatialReference crs;
    crs.importFromEPSG(epsg);
    dataset->SetSpatialRef(&crs);
  }
  return path;
}

struct Run {
  std::unique_ptr<mgpr::runtime::TileSource> source;
  OutputPlan plan;
};

Run plan_run(const TempDir& scratch, Task task, OutputLayout layout, const std::vector<std::string>& rasters) {
  mgpr::runtime::SourceOptions source;
  source.rasters = rasters;
  source.tile_size = kTile;
  Run run;
  run.source = mgpr::runtime::make_tile_source(source);
  TaskOptions options;
  options.task = task;
  options.output_dir = scratch.path() / "out";
  options.layout = layout;
  run.plan = mgpr::runtime::plan_outputs(options, *run.source);
  return run;
}

// Every tile's result as ranks would gather it; a raster in `failed` has only its first tile.
// detect: one box 10 px square near each tile's top-left corner (no two overlap);
// classify: label 2, score 0.75, logit 1.5.
TileResults results(const OutputPlan& plan, const RasterFailures& failed) {
  TileResults all;
  std::set<int> seen;
  for (const auto& tile : plan.tiles) {
    if (failed.contains(tile.id.image) && !seen.insert(tile.id.image).second) continue;
    const auto& w = tile.window;
    all[tile.id] = plan.options.task == Task::kDetect
                       ? std::to_string(w.x + 5) + " " + std::to_string(w.y + 5) + " " + std::to_string(w.x + 15) +
                             " " + std::to_string(w.y + 15) + " 0.875 1 0;"
                       : std::string("2 0.75 1.5");
  }
  return all;
}

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

GDALDatasetUniquePtr open_vector(const fs::path& file) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY));
  if (!dataset) throw std::runtime_error("GDAL cannot open " + file.string());
  return dataset;
}

std::vector<std::string> layer_names(GDALDataset& dataset) {
  std::vector<std::string> names;
  for (auto* layer : dataset.GetLayers()) names.emplace_back(layer->GetName());
  return names;
}

// How many features of `layer` have each value of its `raster` field.
std::map<std::string, int> per_raster(OGRLayer& layer) {
  std::map<std::string, int> counts;
  for (const auto& feature : layer) ++counts[feature->GetFieldAsString("raster")];
  return counts;
}

struct RasterRow {
  std::string status;
  std::string error;
  std::int64_t tiles = 0;
  std::int64_t tiles_done = 0;
  std::int64_t results = 0;
  OGREnvelope extent;
};

std::map<std::string, RasterRow> rasters_layer(OGRLayer& layer) {
  std::map<std::string, RasterRow> rows;
  for (const auto& feature : layer) {
    RasterRow row{feature->GetFieldAsString("status"),     feature->GetFieldAsString("error"),
                  feature->GetFieldAsInteger64("tiles"),   feature->GetFieldAsInteger64("tiles_done"),
                  feature->GetFieldAsInteger64("results"), {}};
    feature->GetGeometryRef()->getEnvelope(&row.extent);
    rows[feature->GetFieldAsString("raster")] = row;
  }
  return rows;
}

bool same_crs(OGRLayer& layer, int epsg) {
  OGRSpatialReference expected;
  expected.importFromEPSG(epsg);
  return layer.GetSpatialRef() != nullptr && layer.GetSpatialRef()->IsSame(&expected);
}

}  // namespace

// Three rasters, the second unreadable after its first tile: the run's CSV and GeoPackage
// hold the other two's boxes with their names; the `rasters` layer lists all three.
TEST(RunOutputs, DetectWritesOneCsvAndGeoPackageAndListsTheFailedRaster) {
  TempDir scratch;
  const std::vector<std::string> paths{raster(scratch, "a.tif"), raster(scratch, "b.tif"),
                                       raster(scratch, "c.tif", 32633, 200, 150)};
  auto run = plan_run(scratch, Task::kDetect, OutputLayout::kRun, paths);
  ASSERT_EQ(run.plan.layout, OutputLayout::kRun);
  const RasterFailures failed{{1, "cannot read '" + paths[1] + "': TIFFReadEncodedTile failed"}};
  const auto written = mgpr::runtime::make_task_output(run.plan)->write_outputs(results(run.plan, failed), failed);

  const auto out = scratch.path() / "out";
  EXPECT_THAT(names_in(out), ElementsAre("run_detections.csv", "run_detections.gpkg"));
  EXPECT_THAT(written, ElementsAre(out / "run_detections.csv", out / "run_detections.gpkg"));

  const auto csv = lines_of(out / "run_detections.csv");
  ASSERT_EQ(csv.size(), 1U + 4U + 12U);  // a: 2 x 2 tiles, c: 4 x 3, one box each
  EXPECT_EQ(csv[0],
            "raster,label,score,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2,center_x,center_y,tile_row,tile_column");
  EXPECT_EQ(csv[1].substr(0, paths[0].size() + 1), paths[0] + ",");
  EXPECT_EQ(csv[5].substr(0, paths[2].size() + 1), paths[2] + ",");
  for (const auto& line : csv) EXPECT_EQ(line.find("b.tif"), std::string::npos) << line;

  const auto gpkg = open_vector(out / "run_detections.gpkg");
  EXPECT_THAT(layer_names(*gpkg), ElementsAre("detections", "rasters"));
  auto& detections = *gpkg->GetLayerByName("detections");
  EXPECT_TRUE(same_crs(detections, 32633));
  auto* fields = detections.GetLayerDefn();
  ASSERT_EQ(fields->GetFieldCount(), 7);
  EXPECT_STREQ(fields->GetFieldDefn(0)->GetNameRef(), "raster");
  EXPECT_EQ(fields->GetFieldDefn(0)->GetType(), OFTString);
  EXPECT_STREQ(fields->GetFieldDefn(1)->GetNameRef(), "label");
  EXPECT_THAT(per_raster(detections), ElementsAre(std::pair{paths[0], 4}, std::pair{paths[2], 12}));

  auto& footprints = *gpkg->GetLayerByName("rasters");
  EXPECT_TRUE(same_crs(footprints, 32633));
  const auto rows = rasters_layer(footprints);
  ASSERT_EQ(rows.size(), 3U);
  const auto& a = rows.at(paths[0]);
  EXPECT_EQ(a.status, "complete");
  EXPECT_EQ(a.error, "");
  EXPECT_EQ(a.tiles, 4);
  EXPECT_EQ(a.tiles_done, 4);
  EXPECT_EQ(a.results, 4);
  // The footprint in map coordinates: write_raster's origin (500000, 4500000), 0.1 m pixels.
  EXPECT_DOUBLE_EQ(a.extent.MinX, 500000.0);
  EXPECT_DOUBLE_EQ(a.extent.MaxX, 500000.0 + 12.8);
  EXPECT_DOUBLE_EQ(a.extent.MaxY, 4500000.0);
  EXPECT_DOUBLE_EQ(a.extent.MinY, 4500000.0 - 9.6);
  const auto& b = rows.at(paths[1]);
  EXPECT_EQ(b.status, "failed");
  EXPECT_EQ(b.error, failed.at(1));
  EXPECT_EQ(b.tiles, 4);
  EXPECT_EQ(b.tiles_done, 1);
  EXPECT_EQ(b.results, 0);
  const auto& c = rows.at(paths[2]);
  EXPECT_EQ(c.status, "complete");
  EXPECT_EQ(c.tiles, 12);
  EXPECT_EQ(c.tiles_done, 12);
  EXPECT_EQ(c.results, 12);
}

TEST(RunOutputs, ClassifyWritesOneCsvAndGeoPackageAndListsTheFailedRaster) {
  TempDir scratch;
  const std::vector<std::string> paths{raster(scratch, "a.tif"), raster(scratch, "b.tif"), raster(scratch, "c.tif")};
  auto run = plan_run(scratch, Task::kClassify, OutputLayout::kRun, paths);
  const RasterFailures failed{{2, "cannot read '" + paths[2] + "': not a TIFF"}};
  const auto written = mgpr::runtime::make_task_output(run.plan)->write_outputs(results(run.plan, failed), failed);

  const auto out = scratch.path() / "out";
  EXPECT_THAT(names_in(out), ElementsAre("run_tiles.csv", "run_tiles.gpkg"));
  EXPECT_EQ(written.size(), 2U);
  const auto csv = lines_of(out / "run_tiles.csv");
  ASSERT_EQ(csv.size(), 1U + 8U);
  EXPECT_EQ(csv[0], "raster,image,row,column,x,y,width,height,center_x,center_y,label,score,logit");
  EXPECT_EQ(csv[1].substr(0, paths[0].size() + 3), paths[0] + ",0,");
  EXPECT_EQ(csv[8].substr(0, paths[1].size() + 3), paths[1] + ",1,");

  const auto gpkg = open_vector(out / "run_tiles.gpkg");
  EXPECT_THAT(layer_names(*gpkg), ElementsAre("tiles", "rasters"));
  auto& tiles = *gpkg->GetLayerByName("tiles");
  EXPECT_STREQ(tiles.GetLayerDefn()->GetFieldDefn(0)->GetNameRef(), "raster");
  EXPECT_STREQ(tiles.GetLayerDefn()->GetFieldDefn(1)->GetNameRef(), "tile_row");
  EXPECT_THAT(per_raster(tiles), ElementsAre(std::pair{paths[0], 4}, std::pair{paths[1], 4}));
  const auto rows = rasters_layer(*gpkg->GetLayerByName("rasters"));
  EXPECT_EQ(rows.at(paths[0]).results, 4);
  EXPECT_EQ(rows.at(paths[2]).status, "failed");
  EXPECT_EQ(rows.at(paths[2]).error, failed.at(2));
  EXPECT_EQ(rows.at(paths[2]).tiles_done, 1);
  EXPECT_EQ(rows.at(paths[2]).results, 0);
}

// A GeoPackage layer has one CRS: rasters in EPSG:32633 (the first raster's, plain
// names), EPSG:32618 and without georeferencing (pixel coordinates) get a pair each.
TEST(RunOutputs, RastersOfSeveralCrsGetALayerPairPerCrs) {
  TempDir scratch;
  const std::vector<std::string> paths{raster(scratch, "a.tif"), raster(scratch, "b.tif", 32618),
                                       raster(scratch, "c.tif"), raster(scratch, "d.tif", 0, 100, 60)};
  auto run = plan_run(scratch, Task::kDetect, OutputLayout::kRun, paths);
  mgpr::runtime::make_task_output(run.plan)->write_outputs(results(run.plan, {}), {});

  const auto gpkg = open_vector(scratch.path() / "out" / "run_detections.gpkg");
  EXPECT_THAT(layer_names(*gpkg), ElementsAre("detections", "rasters", "detections_32618", "rasters_32618",
                                              "detections_nocrs", "rasters_nocrs"));
  EXPECT_THAT(per_raster(*gpkg->GetLayerByName("detections")),
              ElementsAre(std::pair{paths[0], 4}, std::pair{paths[2], 4}));
  EXPECT_THAT(per_raster(*gpkg->GetLayerByName("detections_32618")), ElementsAre(std::pair{paths[1], 4}));
  EXPECT_THAT(per_raster(*gpkg->GetLayerByName("detections_nocrs")),
              ElementsAre(std::pair{paths[3], 2}));  // 2 x 1 tiles
  EXPECT_TRUE(same_crs(*gpkg->GetLayerByName("detections"), 32633));
  EXPECT_TRUE(same_crs(*gpkg->GetLayerByName("rasters"), 32633));
  EXPECT_TRUE(same_crs(*gpkg->GetLayerByName("detections_32618"), 32618));
  EXPECT_TRUE(same_crs(*gpkg->GetLayerByName("rasters_32618"), 32618));
  EXPECT_EQ(rasters_layer(*gpkg->GetLayerByName("rasters")).size(), 2U);
  // Without georeferencing: pixel coordinates, GeoPackage's undefined Cartesian CRS.
  auto& pixels = *gpkg->GetLayerByName("rasters_nocrs");
  ASSERT_NE(pixels.GetSpatialRef(), nullptr);
  EXPECT_TRUE(pixels.GetSpatialRef()->IsLocal());
  const auto d = rasters_layer(pixels).at(paths[3]);
  EXPECT_EQ(d.extent.MinX, 0);
  EXPECT_EQ(d.extent.MaxX, 100);
  EXPECT_EQ(d.extent.MinY, 0);
  EXPECT_EQ(d.extent.MaxY, 60);
}

// outputs=per_raster: the rasters that finished get today's files, the failed one none.
TEST(RunOutputs, PerRasterLayoutSkipsAFailedRaster) {
  for (const auto task : {Task::kDetect, Task::kClassify}) {
    TempDir scratch;
    const std::vector<std::string> paths{raster(scratch, "a.tif"), raster(scratch, "b.tif"), raster(scratch, "c.tif")};
    auto run = plan_run(scratch, task, OutputLayout::kPerRaster, paths);
    const RasterFailures failed{{1, "cannot read 'b.tif'"}};
    const auto written = mgpr::runtime::make_task_output(run.plan)->write_outputs(results(run.plan, failed), failed);
    const auto out = scratch.path() / "out";
    if (task == Task::kDetect) {
      EXPECT_THAT(names_in(out),
                  ElementsAre("a_detections.csv", "a_detections.gpkg", "c_detections.csv", "c_detections.gpkg"));
      EXPECT_EQ(lines_of(out / "c_detections.csv").size(), 1U + 4U);
    } else {
      EXPECT_THAT(names_in(out), ElementsAre("a_tiles.csv", "a_tiles.gpkg", "c_tiles.csv", "c_tiles.gpkg"));
      EXPECT_EQ(lines_of(out / "c_tiles.csv").size(), 1U + 4U);
    }
    EXPECT_EQ(written.size(), 4U);
  }
}

// outputs=auto: per-raster files up to 8 rasters, the run's from 9 on; a layout named is kept.
TEST(RunOutputs, AutoResolvesByTheRasterCount) {
  TempDir scratch;
  std::vector<std::string> paths;
  for (int i = 0; i < 9; ++i) paths.push_back(raster(scratch, "r" + std::to_string(i) + ".tif", 32633, 64, 64));
  const std::vector<std::string> eight(paths.begin(), paths.end() - 1);
  EXPECT_EQ(plan_run(scratch, Task::kDetect, OutputLayout::kAuto, paths).plan.layout, OutputLayout::kRun);
  EXPECT_EQ(plan_run(scratch, Task::kDetect, OutputLayout::kAuto, eight).plan.layout, OutputLayout::kPerRaster);
  EXPECT_EQ(plan_run(scratch, Task::kDetect, OutputLayout::kPerRaster, paths).plan.layout, OutputLayout::kPerRaster);
  EXPECT_EQ(plan_run(scratch, Task::kDetect, OutputLayout::kRun, {paths[0]}).plan.layout, OutputLayout::kRun);

  auto run = plan_run(scratch, Task::kClassify, OutputLayout::kAuto, paths);
  mgpr::runtime::make_task_output(run.plan)->write_outputs(results(run.plan, {}), {});
  EXPECT_THAT(names_in(scratch.path() / "out"), ElementsAre("run_tiles.csv", "run_tiles.gpkg"));
  const auto gpkg = open_vector(scratch.path() / "out" / "run_tiles.gpkg");
  EXPECT_EQ(gpkg->GetLayerByName("rasters")->GetFeatureCount(), 9);
  EXPECT_EQ(gpkg->GetLayerByName("tiles")->GetFeatureCount(), 9);
}

// task=segment keeps its mosaics per raster (they cannot share a CRS) and adds the run's
// GeoPackage with the `rasters` layer only; a failed raster gets no mosaic.
TEST(RunOutputs, SegmentKeepsMosaicsPerRasterAndListsTheRasters) {
  TempDir scratch;
  const std::vector<std::string> paths{raster(scratch, "a.tif"), raster(scratch, "b.tif")};
  auto run = plan_run(scratch, Task::kSegment, OutputLayout::kRun, paths);
  auto output = mgpr::runtime::make_task_output(run.plan);
  const RasterFailures failed{{1, "cannot read 'b.tif'"}};
  std::vector<mgpr::runtime::TileData> batch;
  for (const auto& tile : run.plan.tiles) {
    if (tile.id.image == 1 && batch.size() > 4) continue;  // b: its first tile only
    mgpr::runtime::TileData data;
    data.tile = tile;
    data.channels = 1;
    data.height = kTile;
    data.width = kTile;
    batch.push_back(data);
  }
  output->consume(batch, torch::zeros({static_cast<std::int64_t>(batch.size()), 2, kTile, kTile}));
  const auto written = output->write_outputs(output->new_results(), failed);

  const auto out = scratch.path() / "out";
  EXPECT_TRUE(fs::exists(out / "a_segmentation.vrt"));
  EXPECT_FALSE(fs::exists(out / "b_segmentation.vrt"));
  EXPECT_EQ(written.back(), out / "run_segmentation.gpkg");
  const auto gpkg = open_vector(out / "run_segmentation.gpkg");
  EXPECT_THAT(layer_names(*gpkg), ElementsAre("rasters"));
  const auto rows = rasters_layer(*gpkg->GetLayerByName("rasters"));
  EXPECT_EQ(rows.at(paths[0]).status, "complete");
  EXPECT_EQ(rows.at(paths[0]).results, 4);
  EXPECT_EQ(rows.at(paths[1]).status, "failed");
  EXPECT_EQ(rows.at(paths[1]).tiles_done, 1);
}

// Thousands of rasters and a hundred thousand boxes in one GeoPackage: written in one
// transaction, so in seconds (a sync per feature would take many minutes). The plan is
// built by hand: the files are not read for detect's results.
TEST(RunOutputs, ThousandsOfRastersAreWrittenInSeconds) {
  TempDir scratch;
  OutputPlan plan;
  plan.options.task = Task::kDetect;
  plan.options.output_dir = scratch.path() / "out";
  plan.layout = OutputLayout::kRun;
  plan.tile_size = 1000;
  TileResults all;
  const auto utm = [] {
    OGRSpatialReference crs;
    crs.importFromEPSG(32618);
    char* wkt = nullptr;
    crs.exportToWkt(&wkt);
    std::string text = wkt;
    CPLFree(wkt);
    return text;
  }();
  constexpr int kRasters = 2000;
  constexpr int kBoxes = 50;
  for (int i = 0; i < kRasters; ++i) {
    mgpr::runtime::RasterDescription description;
    description.path = "/data/NEON_" + std::to_string(i) + ".tif";
    description.width = 1000;
    description.height = 1000;
    description.geotransform = mgpr::runtime::GeoTransform(
        std::array<double, 6>{300000.0 + 1000.0 * (i % 50), 0.1, 0, 4500000.0 - 1000.0 * (i / 50), 0, -0.1});
    description.crs_wkt = utm;
    plan.rasters.push_back(description);
    plan.prefixes.push_back(plan.options.output_dir / ("NEON_" + std::to_string(i)));
    const mgpr::runtime::TileId id{i, 0, 0};
    plan.tiles.push_back({id, {0, 0, 1000, 1000}});
    std::string boxes;
    for (int b = 0; b < kBoxes; ++b) {
      boxes += std::to_string(20 * b) + " " + std::to_string(20 * b) + " " + std::to_string(20 * b + 10) + " " +
               std::to_string(20 * b + 10) + " 0.5 1 0;";
    }
    all[id] = boxes;
  }
  const auto start = std::chrono::steady_clock::now();
  mgpr::runtime::make_task_output(plan)->write_outputs(all, {});
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto gpkg = open_vector(plan.options.output_dir / "run_detections.gpkg");
  EXPECT_EQ(gpkg->GetLayerByName("detections")->GetFeatureCount(), kRasters * kBoxes);
  EXPECT_EQ(gpkg->GetLayerByName("rasters")->GetFeatureCount(), kRasters);
  EXPECT_EQ(lines_of(plan.options.output_dir / "run_detections.csv").size(), 1U + kRasters * kBoxes);
  EXPECT_LT(seconds, 60) << "writing " << kRasters * kBoxes << " boxes took " << seconds << " s";
  RecordProperty("seconds", std::to_string(seconds));
}

namespace {

// The values of field `name` in `layer`, in feature order.
std::vector<std::string> field_values(OGRLayer& layer, const char* name) {
  std::vector<std::string> values;
  layer.ResetReading();
  for (const auto& feature : layer) values.emplace_back(feature->GetFieldAsString(name));
  return values;
}

int field_index(OGRLayer& layer, const char* name) { return layer.GetLayerDefn()->GetFieldIndex(name); }

std::vector<std::string> category_names(const fs::path& raster) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(raster.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  if (!dataset) throw std::runtime_error("GDAL cannot open " + raster.string());
  // GDAL 3.6's GeoTIFF driver reads the .aux.xml side-car on the first call for
  // georeferencing, not for category names; gdalinfo and QGIS ask for it first too.
  std::array<double, 6> terms{};
  (void)dataset->GetGeoTransform(terms.data());
  std::vector<std::string> names;
  if (char** list = GDALGetRasterCategoryNames(GDALRasterBand::ToHandle(dataset->GetRasterBand(1)))) {
    for (; *list != nullptr; ++list) names.emplace_back(*list);
  }
  return names;
}

// One batch of every tile of the plan (a raster whose tiles are all 64 x 64 pixels of
// data); the model says class 1 left of the tile's middle column, 0 right of it.
void segment_every_tile(mgpr::runtime::TaskOutput& output, const OutputPlan& plan) {
  std::vector<mgpr::runtime::TileData> batch;
  for (const auto& tile : plan.tiles) {
    mgpr::runtime::TileData data;
    data.tile = tile;
    data.channels = 1;
    data.height = kTile;
    data.width = kTile;
    batch.push_back(data);
  }
  auto scores = torch::zeros({static_cast<std::int64_t>(batch.size()), 2, kTile, kTile});
  scores.index_put_({torch::indexing::Slice(), 1, torch::indexing::Slice(), torch::indexing::Slice(0, kTile / 2)}, 1.0);
  output.consume(batch, scores);
}

}  // namespace

// Issue 34: class names give the CSVs a `label_name` column right after `label` and the
// GeoPackage layers a `label_name` text field beside it, in both layouts; a label past
// the list gets an empty name. (Without names the files are as before: tests above.)
TEST(RunOutputs, ClassNamesGetAColumnAndAFieldBesideTheLabel) {
  for (const auto layout : {OutputLayout::kPerRaster, OutputLayout::kRun}) {
    TempDir scratch;
    const std::vector<std::string> paths{raster(scratch, "a.tif")};
    const auto out = scratch.path() / "out";
    const bool run = layout == OutputLayout::kRun;

    auto detect = plan_run(scratch, Task::kDetect, layout, paths);
    detect.plan.options.class_names = {"__background__", "tree, broadleaf"};
    mgpr::runtime::make_task_output(detect.plan)->write_outputs(results(detect.plan, {}), {});
    const auto boxes = lines_of(out / (run ? "run_detections.csv" : "a_detections.csv"));
    ASSERT_EQ(boxes.size(), 1U + 4U);
    EXPECT_EQ(boxes[0],
              "raster,label,label_name,score,x1,y1,x2,y2,map_x1,map_y1,map_x2,map_y2,center_x,center_y,tile_row,"
              "tile_column");
    EXPECT_TRUE(boxes[1].starts_with(paths[0] + ",1,\"tree, broadleaf\",0.875,")) << boxes[1];
    const auto detections_gpkg = open_vector(out / (run ? "run_detections.gpkg" : "a_detections.gpkg"));
    auto& detections = *detections_gpkg->GetLayerByName("detections");
    EXPECT_EQ(field_index(detections, "label_name"), field_index(detections, "label") + 1);
    EXPECT_EQ(detections.GetLayerDefn()->GetFieldDefn(field_index(detections, "label_name"))->GetType(), OFTString);
    EXPECT_THAT(field_values(detections, "label_name"),
                ElementsAre("tree, broadleaf", "tree, broadleaf", "tree, broadleaf", "tree, broadleaf"));

    // Label 2 of a list of one: no name, but the column.
    auto classify = plan_run(scratch, Task::kClassify, layout, paths);
    classify.plan.options.class_names = {"Tree"};
    mgpr::runtime::make_task_output(classify.plan)->write_outputs(results(classify.plan, {}), {});
    const auto tiles_csv = lines_of(out / (run ? "run_tiles.csv" : "a_tiles.csv"));
    ASSERT_EQ(tiles_csv.size(), 1U + 4U);
    EXPECT_EQ(tiles_csv[0], "raster,image,row,column,x,y,width,height,center_x,center_y,label,label_name,score,logit");
    EXPECT_TRUE(tiles_csv[1].ends_with(",2,,0.75,1.5")) << tiles_csv[1];
    classify.plan.options.class_names = {"background", "grass", "building"};
    mgpr::runtime::make_task_output(classify.plan)->write_outputs(results(classify.plan, {}), {});
    EXPECT_TRUE(lines_of(out / (run ? "run_tiles.csv" : "a_tiles.csv"))[1].ends_with(",2,building,0.75,1.5"));
    const auto tiles_gpkg = open_vector(out / (run ? "run_tiles.gpkg" : "a_tiles.gpkg"));
    auto& tiles = *tiles_gpkg->GetLayerByName("tiles");
    EXPECT_EQ(field_index(tiles, "label_name"), field_index(tiles, "label") + 1);
    EXPECT_THAT(field_values(tiles, "label_name"), ElementsAre("building", "building", "building", "building"));
  }
}

// Issue 34: the class raster's category names and attribute table, in the VRT and the
// COG (with its .aux.xml side-car), and a legend on the quicklook.
TEST(RunOutputs, SegmentNamesTheClassesInTheMosaicAndItsCopy) {
  TempDir scratch;
  auto run = plan_run(scratch, Task::kSegment, OutputLayout::kPerRaster, {raster(scratch, "a.tif")});
  run.plan.options.class_names = {"ground", "tree"};
  run.plan.options.cog = true;
  run.plan.options.quicklook = true;
  auto output = mgpr::runtime::make_task_output(run.plan);
  segment_every_tile(*output, run.plan);
  output->write_outputs(output->new_results(), {});
  const auto out = scratch.path() / "out";
  EXPECT_THAT(names_in(out), ElementsAre("a_quicklook.png", "a_segmentation", "a_segmentation.tif",
                                         "a_segmentation.tif.aux.xml", "a_segmentation.vrt"));
  EXPECT_THAT(category_names(out / "a_segmentation.vrt"), ElementsAre("ground", "tree"));
  EXPECT_THAT(category_names(out / "a_segmentation.tif"), ElementsAre("ground", "tree"));
}

// Issue 34, segment_resolution=raster: a raster read at the model's resolution (here its
// 128 x 96 pixels of 0.1 m read as 64 x 48 of 0.2 m; the plan is made by hand as the
// source would make it) gets its class and probability mosaics, their COG and quicklook
// on its own grid: the model's 32 columns of class 1 are the raster's first 64. The
// mosaic on the model's grid stays in the pieces' folder. Without the option the
// mosaic stays on the model's grid, and its quicklook is still drawn on the raster.
TEST(RunOutputs, SegmentAtRasterResolutionPutsTheClassesBackOnTheRastersGrid) {
  for (const bool back : {true, false}) {
    TempDir scratch;
    auto run = plan_run(scratch, Task::kSegment, OutputLayout::kPerRaster, {raster(scratch, "a.tif")});
    auto& description = run.plan.rasters.at(0);
    ASSERT_TRUE(description.geotransform.has_value());
    const auto own = *description.geotransform;
    const auto& t = own.terms();
    description.native_grid = mgpr::runtime::RasterDescription::NativeGrid{128, 96, own};
    description.width = 64;
    description.height = 48;
    description.geotransform =
        mgpr::runtime::GeoTransform(std::array<double, 6>{t[0], t[1] * 2, t[2] * 2, t[3], t[4] * 2, t[5] * 2});
    run.plan.tiles = mgpr::runtime::tile_image(0, 64, 48, kTile, 0);
    run.plan.options.segment_at_raster_resolution = back;
    run.plan.options.segment_probability = true;
    run.plan.options.cog = true;
    run.plan.options.quicklook = true;
    run.plan.options.class_names = {"ground", "tree"};
    auto output = mgpr::runtime::make_task_output(run.plan);
    segment_every_tile(*output, run.plan);
    const auto written = output->write_outputs(output->new_results(), {});
    const auto out = scratch.path() / "out";
    EXPECT_EQ(written.size(), 4U);
    EXPECT_EQ(fs::exists(out / "a_segmentation" / "model_grid.vrt"), back);
    EXPECT_EQ(fs::exists(out / "a_probability" / "model_grid.vrt"), back);
    const int width = back ? 128 : 64;
    const int height = back ? 96 : 48;
    for (const auto* name : {"a_segmentation.vrt", "a_segmentation.tif", "a_probability.vrt"}) {
      GDALDatasetUniquePtr dataset(GDALDataset::Open((out / name).c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
      ASSERT_TRUE(dataset) << name;
      EXPECT_EQ(dataset->GetRasterXSize(), width) << name;
      EXPECT_EQ(dataset->GetRasterYSize(), height) << name;
      std::array<double, 6> terms{};
      ASSERT_EQ(dataset->GetGeoTransform(terms.data()), CE_None);
      EXPECT_EQ(terms, back ? own.terms() : description.geotransform->terms()) << name;
      if (std::string(name).starts_with("a_probability")) continue;
      std::vector<std::uint8_t> classes(static_cast<std::size_t>(width) * height);
      ASSERT_EQ(dataset->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, width, height, classes.data(), width, height,
                                                    GDT_Byte, 0, 0, nullptr),
                CE_None);
      for (int row = 0; row < height; ++row) {
        for (int column = 0; column < width; ++column) {
          ASSERT_EQ(classes[static_cast<std::size_t>(row) * width + column], column < width / 2 ? 1 : 0)
              << name << " " << column << "," << row;
        }
      }
      EXPECT_THAT(category_names(out / name), ElementsAre("ground", "tree")) << name;
    }
    EXPECT_TRUE(fs::exists(out / "a_quicklook.png"));
  }
}
