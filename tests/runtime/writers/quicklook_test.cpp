// Quicklooks: the PNG read back with GDAL is downsampled to max_side, shows the raster
// (stretched when not 8-bit), outlines boxes and tints segmentation classes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>

#include "read_back.hpp"
#include "support/rasters.hpp"
#include "writers/quicklook.hpp"
#include "writers/segment_mosaic.hpp"

namespace {

using mgpr::runtime::Box;
using mgpr::runtime::QuicklookSource;
using mgpr::test::runtime_error_of;
using mgpr::test::TempDir;
using testing::ElementsAre;
using testing::HasSubstr;
using Rgb = std::array<int, 3>;

using Fill = std::function<double(int band, int column, int row)>;

std::string write_source(const std::filesystem::path& file, GDALDataType type, int width, int height, int bands,
                         const Fill& fill) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(
      GetGDALDriverManager()->GetDriverByName("GTiff")->Create(file.c_str(), width, height, bands, type, nullptr));
  if (!dataset) throw std::runtime_error("cannot create " + file.string());
  std::vector<double> values(static_cast<std::size_t>(width) * static_cast<std::size_t>(height));
  for (int band = 1; band <= bands; ++band) {
    for (int row = 0; row < height; ++row) {
      for (int column = 0; column < width; ++column) {
        values[static_cast<std::size_t>(row) * width + column] = fill(band, column, row);
      }
    }
    if (dataset->GetRasterBand(band)->RasterIO(GF_Write, 0, 0, width, height, values.data(), width, height, GDT_Float64,
                                               0, 0, nullptr) != CE_None) {
      throw std::runtime_error("cannot write " + file.string());
    }
  }
  return file.string();
}

constexpr Rgb kLeft{10, 100, 200};
constexpr Rgb kRight{200, 50, 20};

// 1000 x 800, RGB, left half kLeft, right half kRight.
std::string two_halves(const TempDir& scratch) {
  return write_source(scratch.path() / "photo.tif", GDT_Byte, 1000, 800, 3, [](int band, int column, int) {
    return (column < 500 ? kLeft : kRight)[static_cast<std::size_t>(band - 1)];
  });
}

class Png {
 public:
  explicit Png(const std::filesystem::path& file) : dataset_(mgpr::test::open_dataset(file)) {
    EXPECT_STREQ(dataset_->GetDriver()->GetDescription(), "PNG");
    EXPECT_EQ(dataset_->GetRasterCount(), 3);
    for (int band = 1; band <= 3; ++band) {
      planes_.push_back(mgpr::test::read_band<std::uint8_t>(*dataset_->GetRasterBand(band), GDT_Byte));
    }
  }
  [[nodiscard]] int width() const { return dataset_->GetRasterXSize(); }
  [[nodiscard]] int height() const { return dataset_->GetRasterYSize(); }
  [[nodiscard]] Rgb at(int x, int y) const {
    const auto i = static_cast<std::size_t>(y) * static_cast<std::size_t>(width()) + static_cast<std::size_t>(x);
    return {planes_[0][i], planes_[1][i], planes_[2][i]};
  }

 private:
  GDALDatasetUniquePtr dataset_;
  std::vector<std::vector<std::uint8_t>> planes_;
};

Box box(double x1, double y1, double x2, double y2, std::int64_t label) {
  Box result;
  result.x1 = x1;
  result.y1 = y1;
  result.x2 = x2;
  result.y2 = y2;
  result.label = label;
  return result;
}

TEST(Quicklook, BoxesAreOutlinedInAColourPerLabel) {
  TempDir scratch;
  const QuicklookSource source{two_halves(scratch), {1, 2, 3}, 500};
  const auto png = scratch.path() / "quicklook.png";
  const std::vector<Box> boxes{box(200, 100, 600, 500, 1), box(700, 600, 900, 750, 2)};
  mgpr::runtime::write_box_quicklook(png, source, boxes);

  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("photo.tif", "quicklook.png"));
  const Png picture(png);
  ASSERT_EQ(picture.width(), 500);  // halved: the longest side is max_side
  ASSERT_EQ(picture.height(), 400);
  // First box at (100, 50)-(300, 250) in the quicklook, 2 pixels wide on every side.
  const Rgb first = picture.at(100, 150);
  EXPECT_NE(first, kLeft);
  EXPECT_NE(first, kRight);
  for (const auto& [x, y] : {std::pair{101, 150}, {299, 150}, {298, 150}, {200, 50}, {200, 51}, {200, 249}}) {
    EXPECT_EQ(picture.at(x, y), first) << x << "," << y;
  }
  EXPECT_EQ(picture.at(102, 150), kLeft);  // inside, past the outline
  EXPECT_EQ(picture.at(297, 150), kRight);
  // Second box at (350, 300)-(450, 375), another label, another colour.
  const Rgb second = picture.at(350, 340);
  EXPECT_NE(second, first);
  EXPECT_NE(second, kRight);
  EXPECT_EQ(picture.at(400, 374), second);
  // Far from both boxes the raster shows as it is (8-bit: not stretched).
  EXPECT_EQ(picture.at(20, 380), kLeft);
  EXPECT_EQ(picture.at(480, 20), kRight);
}

TEST(Quicklook, SixteenBitGreyIsStretchedAndNotEnlarged) {
  TempDir scratch;
  const auto raster = write_source(scratch.path() / "grey.tif", GDT_UInt16, 400, 300, 1,
                                   [](int, int column, int) { return column < 200 ? 1000.0 : 3000.0; });
  const auto png = scratch.path() / "grey.png";
  mgpr::runtime::write_box_quicklook(png, {raster, {1}, 1024}, {});
  const Png picture(png);
  ASSERT_EQ(picture.width(), 400);
  ASSERT_EQ(picture.height(), 300);
  EXPECT_EQ(picture.at(50, 150), (Rgb{0, 0, 0}));
  EXPECT_EQ(picture.at(350, 150), (Rgb{255, 255, 255}));
}

// Classes 3 in a band across both halves, kNoClass in the right half, 0 elsewhere.
TEST(Quicklook, MaskTintsClassesHalfwayAndLeavesTheRest) {
  TempDir scratch;
  const QuicklookSource source{two_halves(scratch), {1, 2, 3}, 500};
  const mgpr::runtime::PixelWindow whole{0, 0, 1000, 800};
  std::vector<std::uint8_t> classes(1000 * 800, 0);
  for (int row = 0; row < 800; ++row) {
    for (int column = 0; column < 1000; ++column) {
      auto& value = classes[static_cast<std::size_t>(row) * 1000 + column];
      if (row >= 100 && row < 300 && column >= 200 && column < 800) value = 3;
      if (row >= 500 && row < 700 && column >= 600 && column < 900) value = mgpr::runtime::kNoClass;
    }
  }
  const auto mask = scratch.path() / "classes.tif";
  mgpr::runtime::write_class_piece(mask, whole, classes, {});
  const auto png = scratch.path() / "mask.png";
  mgpr::runtime::write_mask_quicklook(png, source, mask);

  const Png picture(png);
  ASSERT_EQ(picture.width(), 500);
  const Rgb left = picture.at(150, 100);
  const Rgb right = picture.at(350, 100);
  EXPECT_NE(left, kLeft);
  EXPECT_NE(right, kRight);
  EXPECT_EQ(picture.at(110, 60), left);  // one class, one tint
  // Half the raster shows through: the tinted halves differ by half as much as the raster.
  for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(right[c] - left[c], (kRight[c] - kLeft[c]) / 2, 1) << c;
  EXPECT_EQ(picture.at(50, 100), kLeft);    // class 0
  EXPECT_EQ(picture.at(350, 300), kRight);  // kNoClass
  EXPECT_EQ(picture.at(450, 100), kRight);  // class 0
}

// With class names, a legend in the top-left corner: per label drawn, a swatch
// in its outline colour and "<label> <name>" in white, on the raster darkened to a third.
// At 500 px the font is 5 x 7 px: swatches 7 px square at (2, 2) and (2, 12), text from
// x = 11, the panel 2 px wider than the longest text ("1 person": 8 glyphs of 6 px, less
// the last one's gap) and 21 px high. Without names the corner is the raster's.
TEST(Quicklook, ALegendNamesTheLabelsDrawnWithTheirColours) {
  TempDir scratch;
  QuicklookSource source{two_halves(scratch), {1, 2, 3}, 500};
  const std::vector<Box> boxes{box(200, 100, 600, 500, 1), box(700, 600, 900, 750, 2)};
  const auto plain_png = scratch.path() / "plain.png";
  mgpr::runtime::write_box_quicklook(plain_png, source, boxes);
  source.class_names = {"__background__", "person", "car"};
  const auto png = scratch.path() / "legend.png";
  mgpr::runtime::write_box_quicklook(png, source, boxes);

  const Png plain(plain_png);
  const Png picture(png);
  const Rgb first = picture.at(100, 150);  // the outlines, as without a legend
  const Rgb second = picture.at(350, 340);
  EXPECT_EQ(plain.at(100, 150), first);
  EXPECT_EQ(picture.at(2, 2), first);
  EXPECT_EQ(picture.at(8, 8), first);
  EXPECT_EQ(picture.at(2, 12), second);
  EXPECT_EQ(picture.at(8, 18), second);
  const Rgb dark{kLeft[0] / 3, kLeft[1] / 3, kLeft[2] / 3};
  EXPECT_EQ(picture.at(0, 0), dark);
  EXPECT_EQ(picture.at(59, 20), dark);
  EXPECT_EQ(picture.at(60, 5), kLeft);
  EXPECT_EQ(picture.at(5, 21), kLeft);
  // White text on both rows; "2 car" is shorter than "1 person".
  const auto white_in = [&](int x0, int y0, int x1, int y1) {
    int white = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) white += picture.at(x, y) == Rgb{255, 255, 255} ? 1 : 0;
    }
    return white;
  };
  EXPECT_GT(white_in(11, 2, 58, 9), 20);
  EXPECT_GT(white_in(11, 12, 40, 19), 10);
  EXPECT_EQ(white_in(42, 12, 60, 19), 0);
  for (int y = 0; y < 30; ++y) {
    for (int x = 0; x < 70; ++x) ASSERT_EQ(plain.at(x, y), kLeft) << x << "," << y;
  }
}

// The mask's legend lists the classes tinted (class 0 is not), with names past the list
// shown by number; too many to fit end in "+N more".
TEST(Quicklook, AMaskLegendListsTheTintedClassesAndWhatDoesNotFit) {
  TempDir scratch;
  const auto photo = write_source(scratch.path() / "photo.tif", GDT_Byte, 200, 100, 3,
                                  [](int band, int, int) { return kLeft[static_cast<std::size_t>(band - 1)]; });
  std::vector<std::uint8_t> classes(200 * 100, 0);
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const auto column = static_cast<int>(i % 200);
    if (column >= 100) classes[i] = static_cast<std::uint8_t>(1 + (column - 100) / 2);  // classes 1 to 50
  }
  const auto mask = scratch.path() / "classes.tif";
  mgpr::runtime::write_class_piece(mask, {0, 0, 200, 100}, classes, {});
  const auto png = scratch.path() / "mask.png";
  mgpr::runtime::write_mask_quicklook(png, {photo, {1, 2, 3}, 500, 0, 0, {"background", "tree"}}, mask);
  const Png picture(png);
  // 100 px high: 9 rows of 10 px fit, 8 classes and "+42 more".
  const Rgb dark{kLeft[0] / 3, kLeft[1] / 3, kLeft[2] / 3};
  EXPECT_NE(picture.at(5, 2 + 7 * 10 + 3), dark);  // class 8's swatch
  EXPECT_NE(picture.at(5, 2 + 7 * 10 + 3), kLeft);
  EXPECT_EQ(picture.at(5, 2 + 8 * 10 + 3), dark);  // no swatch beside "+42 more"
  EXPECT_EQ(picture.at(5, 97), kLeft);             // below the panel
  // "1 tree" names class 1, "2" to "8" are numbers only: "+42 more" is the longest row,
  // and the panel as wide as it (11 + 8 * 6 - 1 + 2 = 60 px).
  EXPECT_EQ(picture.at(59, 1), dark);
  EXPECT_EQ(picture.at(60, 1), kLeft);
}

// Boxes counted in another grid than the raster's own (a raster read at the model's
// resolution): outlined where they are on the raster.
TEST(Quicklook, BoxesOfAnotherGridAreScaledToTheRaster) {
  TempDir scratch;
  const auto raster = two_halves(scratch);  // 1000 x 800; the boxes' grid is 500 x 400
  const auto png = scratch.path() / "quicklook.png";
  mgpr::runtime::write_box_quicklook(png, {raster, {1, 2, 3}, 500, 500, 400}, std::vector{box(100, 50, 300, 250, 1)});
  const Png picture(png);
  ASSERT_EQ(picture.width(), 500);
  const Rgb outline = picture.at(100, 150);
  EXPECT_NE(outline, kLeft);
  EXPECT_EQ(picture.at(299, 150), outline);
  EXPECT_EQ(picture.at(200, 249), outline);
  EXPECT_EQ(picture.at(102, 150), kLeft);
}

TEST(Quicklook, ErrorsNameTheFiles) {
  TempDir scratch;
  const auto png = scratch.path() / "quicklook.png";
  const auto missing = scratch.file("missing.tif");
  auto message = runtime_error_of([&] { mgpr::runtime::write_box_quicklook(png, {missing, {1}, 100}, {}); });
  EXPECT_THAT(message, HasSubstr("'" + png.string() + "'"));
  EXPECT_THAT(message, HasSubstr(missing));

  const auto raster = two_halves(scratch);
  const auto unwritable = scratch.path() / "no-such-folder" / "quicklook.png";
  message = runtime_error_of([&] { mgpr::runtime::write_box_quicklook(unwritable, {raster, {1}, 100}, {}); });
  EXPECT_THAT(message, HasSubstr("'" + unwritable.string() + "'"));

  EXPECT_THROW(mgpr::runtime::write_box_quicklook(png, {raster, {1, 2}, 100}, {}), std::invalid_argument);
  EXPECT_THROW(mgpr::runtime::write_box_quicklook(png, {raster, {4}, 100}, {}), std::invalid_argument);
  const auto small = write_source(scratch.path() / "small.tif", GDT_Byte, 10, 10, 1, [](int, int, int) { return 1; });
  EXPECT_THROW(mgpr::runtime::write_mask_quicklook(png, {raster, {1}, 100}, small), std::invalid_argument);
  EXPECT_THAT(mgpr::test::names_in(scratch.path()), ElementsAre("photo.tif", "small.tif"));
}

}  // namespace
