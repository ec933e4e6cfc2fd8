// vector_formats.cpp's table, a row per format: one row for each value of output_format=,
// in the enum's order and under its name; the facts that set the formats apart; and, for
// every row, that the files GDAL's writer makes from it show them (its layers, its CRS
// for pixel coordinates, its text width, its sidecars, its spatial index).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ogrsf_frmts.h>

#include <array>
#include <fstream>
#include <iterator>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "read_back.hpp"
#include "support/rasters.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime {

// A row in a test's name and messages: its output_format= name (found by gtest through
// the row's namespace).
void PrintTo(const VectorFormat& row, std::ostream* out) { *out << row.name; }

}  // namespace mgpr::runtime

namespace {

using mgpr::OutputFormat;
using mgpr::runtime::GeometryIndex;
using mgpr::runtime::Record;
using mgpr::runtime::RecordLayer;
using mgpr::runtime::UndefinedCrs;
using mgpr::runtime::vector_format;
using mgpr::runtime::vector_formats;
using mgpr::runtime::VectorField;
using mgpr::runtime::VectorFormat;
using mgpr::runtime::VectorWriterKind;
using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::IsEmpty;
using testing::UnorderedElementsAreArray;

using Type = VectorField::Type;
const std::array<VectorField, 3> kFields{
    {{"tile_column", Type::kInteger}, {"score", Type::kReal}, {"raster", Type::kString}}};

std::vector<Record> one_record() {
  const mgpr::runtime::GeoTransform grid(std::array<double, 6>{0.0, 1.0, 0.0, 0.0, 0.0, -1.0});
  return {{grid.footprint(1, 2, 3, 4), {std::int64_t{7}, 0.5, std::string("a.tif")}}};
}

std::string option_in(const VectorFormat& row, std::string_view name) {
  for (const auto& option : row.layer_options) {
    if (option.name == name) return std::string(option.value);
  }
  return "";
}

std::string test_name(const testing::TestParamInfo<VectorFormat>& row) { return std::string(row.param.name); }

TEST(VectorFormatRows, EveryOutputFormatHasExactlyOneRowInTheEnumsOrderUnderItsName) {
  const auto rows = vector_formats();
  ASSERT_EQ(rows.size(), mgpr::kOutputFormatNames.size());
  std::set<std::string_view> extensions;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const auto format = static_cast<OutputFormat>(i);
    EXPECT_EQ(row.format, format) << row.name;
    EXPECT_EQ(&vector_format(format), &row) << row.name;
    EXPECT_EQ(row.name, mgpr::kOutputFormatNames[i]);
    EXPECT_EQ(row.name, mgpr::name_of(format));
    EXPECT_EQ(mgpr::parse_output_format(row.name), format);
    // output_format='s values are the files' extensions (docs/outputs.md).
    EXPECT_EQ(row.extension, "." + std::string(row.name));
    EXPECT_TRUE(extensions.insert(row.extension).second) << row.extension << " twice";
    EXPECT_EQ(mgpr::runtime::vector_format_of("a/b" + std::string(row.extension)), format);
  }
}

// The rows GDAL writes: every one but GeoParquet's, which Debian's GDAL 3.6 has no driver
// for (geoparquet_test.cpp reads it back with Arrow instead).
std::vector<VectorFormat> gdal_rows() {
  std::vector<VectorFormat> rows;
  for (const auto& row : vector_formats()) {
    if (row.writer == VectorWriterKind::kGdal) rows.push_back(row);
  }
  return rows;
}

TEST(VectorFormatRows, GdalWritesEveryFormatWithADriverItHas) {
  GDALAllRegister();
  EXPECT_EQ(vector_format(OutputFormat::kGeoParquet).writer, VectorWriterKind::kGeoParquet);
  EXPECT_EQ(gdal_rows().size() + 1, vector_formats().size()) << "every other row is GDAL's";
  for (const auto& row : gdal_rows()) {
    auto* driver = GetGDALDriverManager()->GetDriverByName(std::string(row.driver).c_str());
    ASSERT_NE(driver, nullptr) << row.driver;
    EXPECT_NE(driver->GetMetadataItem(GDAL_DCAP_VECTOR), nullptr) << row.driver;
    EXPECT_NE(driver->GetMetadataItem(GDAL_DCAP_CREATE), nullptr) << row.driver;
  }
}

TEST(VectorFormatRows, TheRowsSayWhatSetsEachFormatApart) {
  const auto& gpkg = vector_format(OutputFormat::kGeoPackage);
  EXPECT_EQ(gpkg.driver, "GPKG");
  EXPECT_TRUE(gpkg.many_layers);
  EXPECT_EQ(gpkg.undefined_crs, UndefinedCrs::kUndefinedCartesian);
  EXPECT_EQ(gpkg.geometry_index, GeometryIndex::kGpkgRtree);

  const auto& fgb = vector_format(OutputFormat::kFlatGeobuf);
  EXPECT_EQ(fgb.driver, "FlatGeobuf");
  EXPECT_EQ(fgb.geometry_index, GeometryIndex::kByDriver);

  const auto& geojson = vector_format(OutputFormat::kGeoJson);
  EXPECT_EQ(geojson.driver, "GeoJSON");
  EXPECT_EQ(geojson.geometry_index, GeometryIndex::kNone);

  const auto& shapefile = vector_format(OutputFormat::kShapefile);
  EXPECT_EQ(shapefile.driver, "ESRI Shapefile");
  EXPECT_EQ(shapefile.field_name_limit, 10U);  // dBASE's
  EXPECT_EQ(shapefile.text_width, 254);        // the widest dBASE holds
  EXPECT_THAT(shapefile.sidecars, ElementsAre(".shx", ".dbf", ".prj", ".cpg"));
  EXPECT_EQ(option_in(shapefile, "ENCODING"), "UTF-8");
  EXPECT_EQ(option_in(shapefile, "2GB_LIMIT"), "YES");

  const auto& csv = vector_format(OutputFormat::kCsv);
  EXPECT_EQ(csv.driver, "CSV");
  EXPECT_TRUE(csv.replaces_table);
  EXPECT_EQ(csv.geometry_index, GeometryIndex::kNone);
  EXPECT_EQ(option_in(csv, "GEOMETRY"), "AS_WKT");
  EXPECT_EQ(option_in(csv, "CREATE_CSVT"), "NO");
  EXPECT_EQ(option_in(csv, "STRING_QUOTING"), "IF_NEEDED");

  // A folder of one layer's parts.
  const auto& parquet = vector_format(OutputFormat::kGeoParquet);
  EXPECT_EQ(parquet.writer, VectorWriterKind::kGeoParquet);
  EXPECT_FALSE(parquet.many_layers);
  EXPECT_EQ(parquet.geometry_index, GeometryIndex::kNone);
  EXPECT_THAT(parquet.layer_options, IsEmpty());

  // What only one format does, and no other.
  for (const auto& row : vector_formats()) {
    EXPECT_EQ(row.many_layers, row.format == OutputFormat::kGeoPackage) << row.name;
    EXPECT_EQ(row.replaces_table, row.format == OutputFormat::kCsv) << row.name;
    EXPECT_EQ(row.field_name_limit != 0, row.format == OutputFormat::kShapefile) << row.name;
    EXPECT_EQ(row.text_width != 0, row.format == OutputFormat::kShapefile) << row.name;
    EXPECT_EQ(row.sidecars.empty(), row.format != OutputFormat::kShapefile) << row.name;
    EXPECT_THAT(row.dataset_options, IsEmpty()) << row.name;
  }
}

class EveryRow : public testing::TestWithParam<VectorFormat> {};

TEST_P(EveryRow, ItsFileShowsItsFacts) {
  const auto& row = GetParam();
  TempDir scratch;
  const auto file = scratch.path() / ("boxes" + std::string(row.extension));
  mgpr::runtime::write_vector_layer(file, "boxes", "", kFields, one_record());

  // The main file and its sidecars, nothing else (no .prj: no CRS was given).
  std::vector<std::string> names{file.filename()};
  for (const auto sidecar : row.sidecars) {
    if (sidecar != ".prj") names.push_back("boxes" + std::string(sidecar));
  }
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), UnorderedElementsAreArray(names));

  const auto dataset = mgpr::test::open_dataset(file, GDAL_OF_VECTOR);
  ASSERT_EQ(dataset->GetLayerCount(), 1);
  auto& layer = *dataset->GetLayer(0);
  EXPECT_EQ(layer.GetFeatureCount(), 1);
  // Pixel coordinates: no CRS, or the undefined Cartesian one, never a geographic one.
  // A GeoJSON file without a `crs` member is WGS 84 by definition (RFC 7946), and GDAL
  // reads it so: that the row wrote none shows in the file's text.
  const auto* crs = layer.GetSpatialRef();
  if (row.undefined_crs == UndefinedCrs::kNone && row.format == OutputFormat::kGeoJson) {
    std::ifstream text(file);
    const std::string json((std::istreambuf_iterator<char>(text)), std::istreambuf_iterator<char>());
    EXPECT_EQ(json.find("\"crs\""), std::string::npos) << json;
  } else if (row.undefined_crs == UndefinedCrs::kNone) {
    EXPECT_EQ(crs, nullptr);
  } else {
    ASSERT_NE(crs, nullptr);
    EXPECT_TRUE(crs->IsLocal());
  }
  // The fields under the names the row keeps, text as wide as the row says.
  auto& definition = *layer.GetLayerDefn();
  for (const auto& field : kFields) {
    const auto name = mgpr::runtime::field_name_in(row, field.name);
    const int index = definition.GetFieldIndex(name.c_str());
    ASSERT_GE(index, 0) << name;
    if (field.type == Type::kString && row.text_width > 0) {
      EXPECT_EQ(definition.GetFieldDefn(index)->GetWidth(), row.text_width);
    }
  }
  // A spatial index where the row has one (GDAL answers from the file: FlatGeobuf's
  // header, GeoPackage's R-tree table).
  EXPECT_EQ(layer.TestCapability(OLCFastSpatialFilter) != 0, row.geometry_index != GeometryIndex::kNone);
}

TEST_P(EveryRow, HoldsManyLayersOnlyWhereItsRowSaysSo) {
  const auto& row = GetParam();
  TempDir scratch;
  const auto file = scratch.path() / ("two" + std::string(row.extension));
  const auto records = one_record();  // the layers' spans point into it
  const std::vector<RecordLayer> two{{"a", "", kFields, records}, {"b", "", kFields, records}};
  if (!row.many_layers) {
    EXPECT_THROW(mgpr::runtime::write_vector_layers(file, two), std::invalid_argument);
    EXPECT_THAT(mgpr::test::names_in(scratch.path()), IsEmpty());
    return;
  }
  mgpr::runtime::write_vector_layers(file, two);
  const auto dataset = mgpr::test::open_dataset(file, GDAL_OF_VECTOR);
  ASSERT_EQ(dataset->GetLayerCount(), 2);
  EXPECT_STREQ(dataset->GetLayer(0)->GetName(), "a");
  EXPECT_STREQ(dataset->GetLayer(1)->GetName(), "b");
}

INSTANTIATE_TEST_SUITE_P(VectorFormatRows, EveryRow, testing::ValuesIn(gdal_rows()), test_name);

}  // namespace
