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
