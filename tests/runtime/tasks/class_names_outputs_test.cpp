// Class names in the tasks' outputs: a `label_name` column and field beside
// the label in CSVs and GeoPackages, category names and an attribute table in the class
// raster and its copy, and segment_resolution=raster putting a resampled raster's classes
// back on its own grid. Real GeoTIFFs opened by the real source; files read back with
// GDAL/OGR.
#include "run_outputs_support.hpp"

using namespace mgpr::test::outputs;  // NOLINT: the suite's helpers

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
    batch.push_back(tile_data(tile));
  }
  auto scores = torch::zeros({static_cast<std::int64_t>(batch.size()), 2, kTile, kTile});
  scores.index_put_({torch::indexing::Slice(), 1, torch::indexing::Slice(), torch::indexing::Slice(0, kTile / 2)}, 1.0);
  output.consume(batch, scores);
}

}  // namespace

// Class names give the CSVs a `label_name` column right after `label` and the
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

// The class raster's category names and attribute table, in the VRT and the
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

// segment_resolution=raster: a raster read at the model's resolution (here its
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
