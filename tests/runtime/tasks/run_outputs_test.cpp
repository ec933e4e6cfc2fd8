// The tasks' final files for many rasters: outputs=run writes one CSV and one
// GeoPackage for the run (results with the raster's name, a `rasters` layer of footprints
// with each raster's status), grouped by CRS; a raster that failed is listed with its
// reason and gets no results, in either layout. Real GeoTIFFs opened by the real source;
// the results are what ranks would have gathered (journal lines), and the files are read
// back with GDAL/OGR.
#include "run_outputs_support.hpp"

using namespace mgpr::test::outputs;  // NOLINT: the suite's helpers

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
    batch.push_back(tile_data(tile));
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
