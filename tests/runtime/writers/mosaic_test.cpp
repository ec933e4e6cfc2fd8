// Segmentation output: pieces, the VRT that ties them together and its COG copy, read
// back with GDAL pixel for pixel, with the input's geotransform (rotated) and CRS.
#include <fmt/format.h>
#include <gdal_rat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "mgpr/error.hpp"
#include "read_back.hpp"
#include "support/rasters.hpp"
#include "writers/segment_mosaic.hpp"

namespace {

using mgpr::runtime::GeoTransform;
using mgpr::runtime::kNoClass;
using mgpr::runtime::MosaicPiece;
using mgpr::runtime::PixelWindow;
using mgpr::runtime::RasterGeoreference;
using mgpr::test::runtime_error_of;
using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::HasSubstr;

constexpr int kWidth = 80;
constexpr int kHeight = 60;
// Unequal cores, so a piece put in the wrong place or with rows and columns swapped shows.
const std::vector<PixelWindow> kCores{{0, 0, 50, 25}, {50, 0, 30, 25}, {0, 25, 50, 35}, {50, 25, 30, 35}};

std::uint8_t class_at(int column, int row) { return static_cast<std::uint8_t>((column * 3 + row * 5) % 11); }
float probability_at(int column, int row) {
  return static_cast<float>(column) * 0.01F + static_cast<float>(row) * 0.5F;
}

RasterGeoreference rotated_georef() {
  return {GeoTransform(std::array<double, 6>{500000.1, 0.3, 0.07, 4500000.3, 0.05, -0.3}), mgpr::test::epsg_wkt(32633)};
}

template <typename T, typename F>
std::vector<T> values_of(const PixelWindow& core, F value_at) {
  std::vector<T> values;
  for (int row = core.y; row < core.y + core.height; ++row) {
    for (int column = core.x; column < core.x + core.width; ++column) values.push_back(value_at(column, row));
  }
  return values;
}

std::vector<MosaicPiece> write_pieces(const std::filesystem::path& folder, const RasterGeoreference& georef,
                                      bool probabilities, std::size_t count = 4) {
  std::filesystem::create_directories(folder);
  std::vector<MosaicPiece> pieces;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& core = kCores[i];
    const auto file = folder / ("piece_" + std::to_string(i) + ".tif");
    if (probabilities) {
      mgpr::runtime::write_probability_piece(file, core, values_of<float>(core, probability_at), georef);
    } else {
      mgpr::runtime::write_class_piece(file, core, values_of<std::uint8_t>(core, class_at), georef);
    }
    pieces.push_back({file, core});
  }
  return pieces;
}

void expect_georeference(GDALDataset& dataset, const RasterGeoreference& georef) {
  std::array<double, 6> terms{};
  ASSERT_EQ(dataset.GetGeoTransform(terms.data()), CE_None);
  EXPECT_EQ(terms, georef.transform.terms());  // bit for bit: written with 17 digits
  const auto srs = mgpr::test::srs_from_wkt(georef.crs_wkt);
  ASSERT_NE(dataset.GetSpatialRef(), nullptr);
  EXPECT_TRUE(dataset.GetSpatialRef()->IsSame(&srs));
}

void expect_classes(const std::filesystem::path& raster) {
  const auto dataset = mgpr::test::open_dataset(raster);
  ASSERT_EQ(dataset->GetRasterXSize(), kWidth);
  ASSERT_EQ(dataset->GetRasterYSize(), kHeight);
  ASSERT_EQ(dataset->GetRasterCount(), 1);
  auto& band = *dataset->GetRasterBand(1);
  EXPECT_EQ(band.GetRasterDataType(), GDT_Byte);
  int has_nodata = 0;
  EXPECT_EQ(band.GetNoDataValue(&has_nodata), kNoClass);
  EXPECT_TRUE(has_nodata);
  EXPECT_EQ(mgpr::test::read_band<std::uint8_t>(band, GDT_Byte),
            values_of<std::uint8_t>({0, 0, kWidth, kHeight}, class_at));
}

std::string text_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SegmentMosaic, ClassPieceIsGeoreferencedAtItsCore) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path(), georef, false);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()),
              ElementsAre("piece_0.tif", "piece_1.tif", "piece_2.tif", "piece_3.tif"));
  const auto dataset = mgpr::test::open_dataset(pieces[3].file);
  EXPECT_EQ(dataset->GetRasterXSize(), 30);
  EXPECT_EQ(dataset->GetRasterYSize(), 35);
  expect_georeference(*dataset, {georef.transform.shifted(50, 25), georef.crs_wkt});
  EXPECT_STREQ(dataset->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "DEFLATE");
  int has_nodata = 0;
  EXPECT_EQ(dataset->GetRasterBand(1)->GetNoDataValue(&has_nodata), kNoClass);
  EXPECT_TRUE(has_nodata);
}

TEST(SegmentMosaic, ClassVrtEqualsTheWholeRasterPixelForPixel) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path() / "pieces", georef, false);
  const auto vrt = scratch.path() / "classes.vrt";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false);

  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("classes.vrt", "pieces"));
  expect_classes(vrt);
  const auto dataset = mgpr::test::open_dataset(vrt);
  expect_georeference(*dataset, georef);
  EXPECT_EQ(dataset->GetRasterBand(1)->GetColorInterpretation(), GCI_GrayIndex);
}

TEST(SegmentMosaic, VrtStillOpensAfterItsFolderMoves) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto out = scratch.path() / "out";
  const auto pieces = write_pieces(out / "pieces", georef, false);
  mgpr::runtime::write_mosaic_vrt(out / "classes.vrt", pieces, kWidth, kHeight, georef, false);
  EXPECT_THAT(text_of(out / "classes.vrt"), testing::Not(HasSubstr(scratch.path().string())));

  const auto moved = scratch.path() / "moved";
  std::filesystem::rename(out, moved);
  expect_classes(moved / "classes.vrt");
}

TEST(SegmentMosaic, PixelsOfNoPieceAreNodata) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path(), georef, false, 3);  // no bottom-right piece
  const auto vrt = scratch.path() / "classes.vrt";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false);
  const auto dataset = mgpr::test::open_dataset(vrt);
  const auto values = mgpr::test::read_band<std::uint8_t>(*dataset->GetRasterBand(1), GDT_Byte);
  EXPECT_EQ(values[static_cast<std::size_t>(59 * kWidth + 79)], kNoClass);
  EXPECT_EQ(values[static_cast<std::size_t>(25 * kWidth + 50)], kNoClass);
  EXPECT_EQ(values[static_cast<std::size_t>(24 * kWidth + 79)], class_at(79, 24));
}

TEST(SegmentMosaic, ProbabilityVrtIsFloat32WithoutNodata) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path() / "pieces", georef, true);
  const auto vrt = scratch.path() / "probability.vrt";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, true);
  const auto dataset = mgpr::test::open_dataset(vrt);
  auto& band = *dataset->GetRasterBand(1);
  EXPECT_EQ(band.GetRasterDataType(), GDT_Float32);
  int has_nodata = 0;
  band.GetNoDataValue(&has_nodata);
  EXPECT_FALSE(has_nodata);
  EXPECT_EQ(mgpr::test::read_band<float>(band, GDT_Float32), values_of<float>({0, 0, kWidth, kHeight}, probability_at));
  expect_georeference(*dataset, georef);
}

TEST(SegmentMosaic, NoGeoTransformForAnInputWithout) {
  TempDir scratch;
  const RasterGeoreference none;
  const auto pieces = write_pieces(scratch.path(), none, false);
  const auto vrt = scratch.path() / "classes.vrt";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, none, false);
  const auto dataset = mgpr::test::open_dataset(vrt);
  std::array<double, 6> terms{};
  EXPECT_NE(dataset->GetGeoTransform(terms.data()), CE_None);
  EXPECT_EQ(dataset->GetSpatialRef(), nullptr);
  expect_classes(vrt);
}

TEST(SegmentMosaic, CogEqualsTheVrtAndHasTheCogLayout) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path() / "pieces", georef, false);
  const auto vrt = scratch.path() / "classes.vrt";
  const auto cog = scratch.path() / "classes.tif";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false);
  mgpr::runtime::write_cog(vrt, cog);

  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("classes.tif", "classes.vrt", "pieces"));
  expect_classes(cog);
  const auto dataset = mgpr::test::open_dataset(cog);
  expect_georeference(*dataset, georef);
  EXPECT_STREQ(dataset->GetMetadataItem("LAYOUT", "IMAGE_STRUCTURE"), "COG");
  EXPECT_STREQ(dataset->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "DEFLATE");
}

// SIGUSR2 before walltime must also stop a long COG copy: GDAL's progress callback
// asks, the copy ends, and nothing half-written is left looking complete.
TEST(SegmentMosaic, ACogCopyStopsWhenAStopIsRequestedAndLeavesNoFile) {
  TempDir scratch;
  const auto stripes = [](int column, int) { return static_cast<std::uint8_t>(column % 6 < 3 ? 0 : 2); };
  const PixelWindow core{0, 0, 600, 600};
  const auto piece = scratch.path() / "piece.tif";
  mgpr::runtime::write_class_piece(piece, core, values_of<std::uint8_t>(core, stripes), rotated_georef());
  const auto vrt = scratch.path() / "classes.vrt";
  const auto cog = scratch.path() / "classes.tif";
  const std::vector<MosaicPiece> pieces{{piece, core}};
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, 600, 600, rotated_georef(), false);
  int asked = 0;
  EXPECT_THROW(mgpr::runtime::write_cog(vrt, cog, [&] { return ++asked > 0; }), mgpr::StoppedOnRequest);
  EXPECT_GT(asked, 0);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("classes.vrt", "piece.tif"));
  // Asked and never stopped, the same copy completes.
  mgpr::runtime::write_cog(vrt, cog, [] { return false; });
  EXPECT_TRUE(std::filesystem::exists(cog));
}

// Large enough for the COG driver to add overviews; those of a class map must hold
// classes (cubic resampling, the driver's default, would blend 0 and 2 into 1).
TEST(SegmentMosaic, CogOverviewsHoldOnlyRealClasses) {
  TempDir scratch;
  const auto stripes = [](int column, int) { return static_cast<std::uint8_t>(column % 6 < 3 ? 0 : 2); };
  std::vector<MosaicPiece> pieces;
  for (const PixelWindow core : {PixelWindow{0, 0, 600, 600}, PixelWindow{600, 0, 600, 600},
                                 PixelWindow{0, 600, 600, 600}, PixelWindow{600, 600, 600, 600}}) {
    const auto file = scratch.path() / fmt::format("piece_{}_{}.tif", core.x, core.y);
    mgpr::runtime::write_class_piece(file, core, values_of<std::uint8_t>(core, stripes), rotated_georef());
    pieces.push_back({file, core});
  }
  const auto vrt = scratch.path() / "classes.vrt";
  const auto cog = scratch.path() / "classes.tif";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, 1200, 1200, rotated_georef(), false);
  mgpr::runtime::write_cog(vrt, cog);

  const auto dataset = mgpr::test::open_dataset(cog);
  auto& band = *dataset->GetRasterBand(1);
  ASSERT_GE(band.GetOverviewCount(), 1);
  for (const auto value : mgpr::test::read_band<std::uint8_t>(*band.GetOverview(0), GDT_Byte)) {
    ASSERT_TRUE(value == 0 || value == 2) << int{value};
  }
}

TEST(SegmentMosaic, BadPiecesAreRefused) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const std::vector<std::uint8_t> three(3);
  EXPECT_THROW(mgpr::runtime::write_class_piece(scratch.path() / "p.tif", {0, 0, 2, 2}, three, georef),
               std::invalid_argument);
  const std::vector<MosaicPiece> outside{{scratch.path() / "p.tif", {70, 0, 20, 10}}};
  EXPECT_THROW(mgpr::runtime::write_mosaic_vrt(scratch.path() / "m.vrt", outside, kWidth, kHeight, georef, false),
               std::invalid_argument);
  EXPECT_TRUE(mgpr::test::names_in(scratch.path()).empty());
}

TEST(SegmentMosaic, ErrorsNameTheFile) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto piece = scratch.path() / "missing" / "piece.tif";
  const std::vector<std::uint8_t> four(4);
  EXPECT_THAT(runtime_error_of([&] {
                mgpr::runtime::write_class_piece(piece, {0, 0, 2, 2}, four, georef);
              }),
              HasSubstr("'" + piece.string() + "'"));
  const auto vrt = scratch.path() / "missing" / "classes.vrt";
  EXPECT_THAT(runtime_error_of([&] { mgpr::runtime::write_mosaic_vrt(vrt, {}, kWidth, kHeight, georef, false); }),
              HasSubstr("'" + vrt.string() + "'"));
  const auto cog = scratch.path() / "classes.tif";
  const auto message = runtime_error_of([&] { mgpr::runtime::write_cog(scratch.path() / "no.vrt", cog); });
  EXPECT_THAT(message, HasSubstr("'" + cog.string() + "'"));
  EXPECT_THAT(message, HasSubstr("no.vrt"));
  EXPECT_TRUE(mgpr::test::names_in(scratch.path()).empty());
}

}  // namespace

namespace {

const std::vector<std::string> kNames{"__background__", "tree", "a & <b>"};

void expect_class_names(const std::filesystem::path& raster) {
  const auto dataset = mgpr::test::open_dataset(raster);
  auto* band = dataset->GetRasterBand(1);
  // GDAL 3.6's GeoTIFF driver reads the .aux.xml side-car on the first call for
  // georeferencing or metadata, not for category names; gdalinfo and QGIS ask for the
  // georeferencing first, and so does this.
  std::array<double, 6> terms{};
  (void)dataset->GetGeoTransform(terms.data());
  const CPLStringList categories(GDALGetRasterCategoryNames(GDALRasterBand::ToHandle(band)), FALSE);
  ASSERT_EQ(categories.size(), 3) << raster;
  EXPECT_STREQ(categories[0], "__background__");
  EXPECT_STREQ(categories[1], "tree");
  EXPECT_STREQ(categories[2], "a & <b>");
  const auto* table = band->GetDefaultRAT();
  ASSERT_NE(table, nullptr) << raster;
  ASSERT_EQ(table->GetColumnCount(), 2);
  EXPECT_STREQ(table->GetNameOfCol(0), "value");
  EXPECT_EQ(table->GetUsageOfCol(0), GFU_MinMax);
  EXPECT_STREQ(table->GetNameOfCol(1), "class_name");
  EXPECT_EQ(table->GetUsageOfCol(1), GFU_Name);
  ASSERT_EQ(table->GetRowCount(), 3);
  for (int row = 0; row < 3; ++row) {
    EXPECT_EQ(table->GetValueAsInt(row, 0), row);
    EXPECT_EQ(table->GetValueAsString(row, 1), kNames[static_cast<std::size_t>(row)]);
  }
}

}  // namespace

// Issue 34: the class names go into the class band as category names and an attribute
// table (value, class_name), in the VRT and in its COG copy, where GeoTIFF keeps them
// in <cog>.aux.xml (renamed into place with it); a COG written again without names loses
// the stale side-car. Without names there is no side-car (CogEqualsTheVrt... above).
TEST(SegmentMosaic, ClassNamesAreCategoryNamesAndAnAttributeTableInTheVrtAndTheCog) {
  TempDir scratch;
  const auto georef = rotated_georef();
  const auto pieces = write_pieces(scratch.path() / "pieces", georef, false);
  const auto vrt = scratch.path() / "classes.vrt";
  const auto cog = scratch.path() / "classes.tif";
  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false, kNames);
  expect_classes(vrt);
  expect_class_names(vrt);
  mgpr::runtime::write_cog(vrt, cog);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()),
              ElementsAre("classes.tif", "classes.tif.aux.xml", "classes.vrt", "pieces"));
  expect_classes(cog);
  expect_class_names(cog);

  mgpr::runtime::write_mosaic_vrt(vrt, pieces, kWidth, kHeight, georef, false);
  mgpr::runtime::write_cog(vrt, cog);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("classes.tif", "classes.vrt", "pieces"));
  const auto plain = mgpr::test::open_dataset(cog);
  EXPECT_EQ(plain->GetRasterBand(1)->GetCategoryNames(), nullptr);
  EXPECT_EQ(plain->GetRasterBand(1)->GetDefaultRAT(), nullptr);
}

// segment_resolution=raster: a mosaic on the model's grid (here the raster's pixels
// doubled, as a raster of 0.15 m read at a model's 0.3 m is) is put back on the raster's
// own grid by nearest neighbour: each model pixel covers 2 x 2 raster pixels, with the
// raster's geotransform (rotated) and CRS, nodata and the class names.
TEST(SegmentMosaic, ResampledVrtPutsTheMosaicBackOnTheRastersOwnGrid) {
  TempDir scratch;
  const auto model = rotated_georef();
  const auto& t = model.transform.terms();
  const GeoTransform own(std::array<double, 6>{t[0], t[1] / 2, t[2] / 2, t[3], t[4] / 2, t[5] / 2});
  for (const bool probabilities : {false, true}) {
    const auto pieces = write_pieces(scratch.path() / "pieces", model, probabilities);
    const auto inner = scratch.path() / "pieces" / "model_grid.vrt";
    const auto vrt = scratch.path() / "classes.vrt";
    mgpr::runtime::write_mosaic_vrt(inner, pieces, kWidth, kHeight, model, probabilities, kNames);
    mgpr::runtime::write_resampled_vrt(vrt, inner, {kWidth, kHeight, model.transform}, {2 * kWidth, 2 * kHeight, own},
                                       model.crs_wkt, probabilities, kNames);
    const auto dataset = mgpr::test::open_dataset(vrt);
    ASSERT_EQ(dataset->GetRasterXSize(), 2 * kWidth);
    ASSERT_EQ(dataset->GetRasterYSize(), 2 * kHeight);
    expect_georeference(*dataset, {own, model.crs_wkt});
    auto& band = *dataset->GetRasterBand(1);
    if (probabilities) {
      EXPECT_EQ(band.GetRasterDataType(), GDT_Float32);
      const auto values = mgpr::test::read_band<float>(band, GDT_Float32);
      for (int row = 0; row < 2 * kHeight; ++row) {
        for (int column = 0; column < 2 * kWidth; ++column) {
          ASSERT_EQ(values[static_cast<std::size_t>(row) * 2 * kWidth + column], probability_at(column / 2, row / 2))
              << column << "," << row;
        }
      }
      continue;
    }
    int has_nodata = 0;
    EXPECT_EQ(band.GetNoDataValue(&has_nodata), kNoClass);
    EXPECT_EQ(has_nodata, 1);
    const auto values = mgpr::test::read_band<std::uint8_t>(band, GDT_Byte);
    for (int row = 0; row < 2 * kHeight; ++row) {
      for (int column = 0; column < 2 * kWidth; ++column) {
        ASSERT_EQ(values[static_cast<std::size_t>(row) * 2 * kWidth + column], class_at(column / 2, row / 2))
            << column << "," << row;
      }
    }
    expect_class_names(vrt);
    // The COG of it is on the raster's grid too.
    const auto cog = scratch.path() / "classes.tif";
    mgpr::runtime::write_cog(vrt, cog);
    const auto copy = mgpr::test::open_dataset(cog);
    EXPECT_EQ(copy->GetRasterXSize(), 2 * kWidth);
    EXPECT_EQ(mgpr::test::read_band<std::uint8_t>(*copy->GetRasterBand(1), GDT_Byte), values);
    // Relative paths: the folder can move.
    std::filesystem::rename(scratch.path(), scratch.path().string() + "-moved");
    const auto moved = mgpr::test::open_dataset(scratch.path().string() + "-moved/classes.vrt");
    EXPECT_EQ(mgpr::test::read_band<std::uint8_t>(*moved->GetRasterBand(1), GDT_Byte), values);
    std::filesystem::rename(scratch.path().string() + "-moved", scratch.path());
  }
}

// A ratio that is not whole (model pixels of 1.5 raster pixels): each raster pixel takes
// the model pixel its centre lies in; centres on a border between two are not checked.
TEST(SegmentMosaic, ResampledVrtTakesThePixelUnderEachCentre) {
  TempDir scratch;
  const RasterGeoreference model{GeoTransform(std::array<double, 6>{1000, 3, 0, 2000, 0, -3}), ""};
  const GeoTransform own(std::array<double, 6>{1000, 2, 0, 2000, 0, -2});
  const auto pieces = write_pieces(scratch.path() / "pieces", model, false);
  const auto inner = scratch.path() / "pieces" / "model_grid.vrt";
  const auto vrt = scratch.path() / "classes.vrt";
  mgpr::runtime::write_mosaic_vrt(inner, pieces, kWidth, kHeight, model, false);
  mgpr::runtime::write_resampled_vrt(vrt, inner, {kWidth, kHeight, model.transform}, {120, 90, own}, "", false);
  const auto dataset = mgpr::test::open_dataset(vrt);
  const auto values = mgpr::test::read_band<std::uint8_t>(*dataset->GetRasterBand(1), GDT_Byte);
  ASSERT_EQ(values.size(), 120U * 90U);
  for (int row = 0; row < 90; ++row) {
    for (int column = 0; column < 120; ++column) {
      if (column % 3 == 1 || row % 3 == 1) continue;  // centre (c + 0.5) / 1.5 on a border
      const auto expected = class_at(static_cast<int>((column + 0.5) / 1.5), static_cast<int>((row + 0.5) / 1.5));
      ASSERT_EQ(values[static_cast<std::size_t>(row) * 120 + column], expected) << column << "," << row;
    }
  }
}

// A grid turned against the raster's own cannot be put back by scaling: refused by name.
TEST(SegmentMosaic, ResampledVrtRefusesAGridTurnedAgainstTheRasters) {
  TempDir scratch;
  const GeoTransform model(std::array<double, 6>{0, 2, 0, 0, 0, -2});
  const GeoTransform turned(std::array<double, 6>{0, 0.7, 0.7, 0, 0.7, -0.7});
  const auto vrt = scratch.path() / "classes.vrt";
  EXPECT_THAT(mgpr::test::error_of<std::invalid_argument>([&] {
                mgpr::runtime::write_resampled_vrt(vrt, scratch.path() / "inner.vrt", {10, 10, model}, {20, 20, turned},
                                                   "", false);
              }),
              HasSubstr("classes.vrt"));
  EXPECT_FALSE(std::filesystem::exists(vrt));
}
