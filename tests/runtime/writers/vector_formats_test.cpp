// Every output format (output_format=, vector_formats.cpp's table) written from the same
// records and read back by GDAL's ogrinfo as a user would: the same features, fields,
// values and polygons (holes included) as the GeoPackage, the CRS where the format keeps
// one, Shapefile's short field names, and no temporary file left beside them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <stdexcept>

#include "read_back.hpp"
#include "support/ogrinfo.hpp"
#include "support/rasters.hpp"
#include "writers/vector_output.hpp"

namespace {

using mgpr::OutputFormat;
using mgpr::runtime::Geometry;
using mgpr::runtime::GeoTransform;
using mgpr::runtime::Record;
using mgpr::runtime::vector_format;
using mgpr::runtime::VectorField;
using mgpr::runtime::write_vector_layer;
using mgpr::test::TempDir;
using testing::ElementsAre;

using Type = VectorField::Type;
const std::array<VectorField, 4> kFields{{{"tile_row", Type::kInteger},
                                          {"tile_column", Type::kInteger},
                                          {"score", Type::kReal},
                                          {"label_name", Type::kString}}};
const GeoTransform kRotated(std::array<double, 6>{500000.25, 0.5, 0.125, 4500000.75, 0.0625, -0.5});

std::vector<Record> records() {
  // A square with a square hole: the polygons segmentation will write.
  const Geometry holed(std::vector<std::vector<mgpr::runtime::MapPoint>>{{{0, 0}, {10, 0}, {10, 10}, {0, 10}},
                                                                         {{2, 2}, {2, 4}, {4, 4}, {4, 2}}});
  return {{kRotated.footprint(10, 20, 30, 50), {std::int64_t{3}, std::int64_t{4}, 0.875, std::string("tree")}},
          {kRotated.footprint(0, 0, 5, 5), {std::int64_t{-1}, std::int64_t{0}, 0.1, std::string("roof, \"flat\"")}},
          {holed, {std::int64_t{7}, std::int64_t{123456789012}, 1e-7, std::string()}}};
}

const std::array<OutputFormat, 4> kOtherFormats{OutputFormat::kFlatGeobuf, OutputFormat::kGeoJson,
                                                OutputFormat::kShapefile, OutputFormat::kCsv};

class EveryFormat : public testing::TestWithParam<OutputFormat> {};

TEST_P(EveryFormat, HoldsTheGeoPackagesFeaturesFieldsAndValues) {
  TempDir scratch;
  const auto crs = mgpr::test::epsg_wkt(32633);
  const auto all = records();
  const auto reference_file = scratch.path() / "boxes.gpkg";
  write_vector_layer(reference_file, "boxes", crs, kFields, all);
  const auto& format = vector_format(GetParam());
  const auto file = scratch.path() / ("boxes" + std::string(format.extension));
  write_vector_layer(file, "boxes", crs, kFields, all);

  const auto reference = mgpr::test::ogrinfo_layer(reference_file);
  const auto written = mgpr::test::ogrinfo_layer(file);
  ASSERT_EQ(reference.count, 3);
  mgpr::test::expect_same_features(reference, written, mgpr::test::quirks_of(std::string(mgpr::name_of(GetParam()))));
  if (GetParam() == OutputFormat::kCsv) {
    EXPECT_EQ(written.crs, "");  // CSV keeps no CRS (docs/outputs.md)
    EXPECT_EQ(written.fields.front(), "WKT");
  } else {
    EXPECT_NE(written.crs.find("32633"), std::string::npos) << written.crs;
  }
}

INSTANTIATE_TEST_SUITE_P(VectorFormats, EveryFormat, testing::ValuesIn(kOtherFormats),
                         [](const auto& format) { return std::string(mgpr::name_of(format.param)); });

TEST(VectorFormats, AShapefileIsCompleteUnderItsNamesAndDropsAStaleCrs) {
  TempDir scratch;
  const auto file = scratch.path() / "boxes.shp";
  write_vector_layer(file, "boxes", mgpr::test::epsg_wkt(32633), kFields, records());
  EXPECT_THAT(mgpr::test::names_in(scratch.path()),
              ElementsAre("boxes.cpg", "boxes.dbf", "boxes.prj", "boxes.shp", "boxes.shx"));
  // Written again without a CRS: the old .prj would give it one.
  write_vector_layer(file, "boxes", "", kFields, records());
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("boxes.cpg", "boxes.dbf", "boxes.shp", "boxes.shx"));
  EXPECT_EQ(mgpr::test::ogrinfo_layer(file).count, 3);
}

TEST(VectorFormats, EmptyLayersAreWrittenInEveryFormat) {
  TempDir scratch;
  for (const auto format : {OutputFormat::kGeoPackage, OutputFormat::kFlatGeobuf, OutputFormat::kGeoJson,
                            OutputFormat::kShapefile, OutputFormat::kCsv}) {
    const auto file = scratch.path() / ("empty" + std::string(vector_format(format).extension));
    write_vector_layer(file, "detections", "", kFields, {});
    EXPECT_EQ(mgpr::test::ogrinfo_layer(file).count, 0) << file;
  }
}

TEST(VectorFormats, TheFormatComesFromTheExtension) {
  using mgpr::runtime::vector_format_of;
  EXPECT_EQ(vector_format_of("a/b.GPKG"), OutputFormat::kGeoPackage);
  EXPECT_EQ(vector_format_of("b.fgb"), OutputFormat::kFlatGeobuf);
  EXPECT_EQ(vector_format_of("b.geojson"), OutputFormat::kGeoJson);
  EXPECT_EQ(vector_format_of("b.shp"), OutputFormat::kShapefile);
  EXPECT_EQ(vector_format_of("b.csv"), OutputFormat::kCsv);
  EXPECT_EQ(vector_format_of("b.txt"), std::nullopt);
  // The names output_format= accepts are the extensions.
  for (const auto name : mgpr::kOutputFormatNames) {
    EXPECT_EQ(vector_format(mgpr::parse_output_format(name)).extension, "." + std::string(name));
  }
  TempDir scratch;
  EXPECT_THROW(write_vector_layer(scratch.path() / "b.txt", "boxes", "", kFields, records()), std::invalid_argument);
  const std::vector<mgpr::runtime::RecordLayer> two{{"a", "", kFields, {}}, {"b", "", kFields, {}}};
  EXPECT_THROW(mgpr::runtime::write_vector_layers(scratch.path() / "b.fgb", two), std::invalid_argument);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre());
}

TEST(VectorFormats, ShapefileNamesAreShortAndNoNameIsCutSilently) {
  const auto& shapefile = vector_format(OutputFormat::kShapefile);
  EXPECT_EQ(mgpr::runtime::field_name_in(shapefile, "tile_column"), "tile_col");
  EXPECT_EQ(mgpr::runtime::field_name_in(shapefile, "label_name"), "label_name");
  EXPECT_THROW((void)mgpr::runtime::field_name_in(shapefile, "a_much_longer_name"), std::logic_error);
  EXPECT_EQ(mgpr::runtime::field_name_in(vector_format(OutputFormat::kGeoPackage), "a_much_longer_name"),
            "a_much_longer_name");
}

TEST(VectorFormats, UnknownOutputFormatNamesTheKeyAndTheAcceptedValues) {
  try {
    (void)mgpr::parse_output_format("kml");
    FAIL() << "no error";
  } catch (const std::exception& error) {
    EXPECT_STREQ(error.what(), "output_format=kml is not one of gpkg, fgb, geojson, shp, csv, parquet");
  }
}

TEST(RecordTable, WritesTheTasksCsvFromRecords) {
  const std::array<VectorField, 4> fields{{{"raster", Type::kString},
                                           {"label", Type::kInteger},
                                           {"score", Type::kReal, VectorField::Shown::kEverywhere, true},
                                           {"center_x", Type::kReal}}};
  const std::vector<Record> rows{{{}, {std::string("a,b.tif"), std::int64_t{2}, double{0.1F}, 0.1}},
                                 {{}, {std::string("say \"c\""), std::int64_t{-1}, 0.875, 500000.25}}};
  EXPECT_EQ(mgpr::runtime::table_header(fields), "raster,label,score,center_x\n");
  EXPECT_EQ(mgpr::runtime::table_rows(fields, rows),
            "\"a,b.tif\",2,0.100000001,0.1\n\"say \"\"c\"\"\",-1,0.875,500000.25\n");
}

}  // namespace
