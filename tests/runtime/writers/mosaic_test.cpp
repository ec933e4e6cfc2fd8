// Segmentation output: pieces, the VRT that ties them together and its COG copy, read
// back with GDAL pixel for pixel, with the input's geotransform (rotated) and CRS.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "mgpr/error.hpp"
#include "mosaic_pieces.hpp"

using namespace mgpr::test::mosaic;  // NOLINT(google-build-using-namespace): every test here cuts these pieces

namespace {

using mgpr::test::runtime_error_of;
using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::HasSubstr;

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
