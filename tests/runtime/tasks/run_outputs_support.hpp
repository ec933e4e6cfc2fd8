#pragma once
// What the tasks' output tests share: rasters written by GDAL and opened by the real
// source, a run's output plan, the results ranks would have gathered, and readers of the
// files written (CSV lines, GeoPackage layers).
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

namespace mgpr::test::outputs {

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
inline std::string raster(const TempDir& scratch, const std::string& name, int epsg = 32633, int width = 128,
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

inline Run plan_run(const TempDir& scratch, Task task, OutputLayout layout, const std::vector<std::string>& rasters) {
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
inline TileResults results(const OutputPlan& plan, const RasterFailures& failed) {
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

// `tile`'s data as a reader hands it on: one channel of kTile x kTile pixels.
inline mgpr::runtime::TileData tile_data(const mgpr::runtime::Tile& tile) {
  mgpr::runtime::TileData data;
  data.tile = tile;
  data.channels = 1;
  data.height = kTile;
  data.width = kTile;
  return data;
}

inline std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

inline std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline GDALDatasetUniquePtr open_vector(const fs::path& file) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY));
  if (!dataset) throw std::runtime_error("GDAL cannot open " + file.string());
  return dataset;
}

inline std::vector<std::string> layer_names(GDALDataset& dataset) {
  std::vector<std::string> names;
  for (auto* layer : dataset.GetLayers()) names.emplace_back(layer->GetName());
  return names;
}

// How many features of `layer` have each value of its `raster` field.
inline std::map<std::string, int> per_raster(OGRLayer& layer) {
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

inline std::map<std::string, RasterRow> rasters_layer(OGRLayer& layer) {
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

inline bool same_crs(OGRLayer& layer, int epsg) {
  OGRSpatialReference expected;
  expected.importFromEPSG(epsg);
  return layer.GetSpatialRef() != nullptr && layer.GetSpatialRef()->IsSame(&expected);
}

}  // namespace mgpr::test::outputs
