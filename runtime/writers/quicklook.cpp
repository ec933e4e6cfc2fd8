#include "writers/quicklook.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "writers/gdal_write.hpp"
#include "writers/segment_mosaic.hpp"

namespace mgpr::runtime {
namespace {

struct Rgb {
  std::uint8_t r = 0;
  std::uint8_t g = 0;
  std::uint8_t b = 0;
};

// Saturated colours that stand out on aerial photographs, green last because most of
// a drone image is vegetation. Picked by value (label or class modulo the size), so a
// label keeps its colour from run to run.
constexpr std::array<Rgb, 8> kPalette{{{230, 25, 75},
                                       {255, 225, 25},
                                       {70, 240, 240},
                                       {240, 50, 230},
                                       {0, 130, 200},
                                       {245, 130, 48},
                                       {145, 30, 180},
                                       {60, 180, 75}}};

Rgb palette_colour(std::int64_t key) {
  const auto size = static_cast<std::int64_t>(kPalette.size());
  return kPalette[static_cast<std::size_t>(((key % size) + size) % size)];
}

// Three planes (red, green, blue) of width x height, as GDAL's band-sequential RasterIO
// wants them.
class Picture {
 public:
  Picture(int width, int height)
      : width_(width),
        height_(height),
        pixels_(3 * static_cast<std::size_t>(width) * static_cast<std::size_t>(height)) {}
  [[nodiscard]] int width() const { return width_; }
  [[nodiscard]] int height() const { return height_; }
  [[nodiscard]] std::size_t plane_size() const { return static_cast<std::size_t>(width_) * height_; }
  std::uint8_t* plane(int band) { return pixels_.data() + static_cast<std::size_t>(band) * plane_size(); }
  void set(int x, int y, Rgb colour) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    const std::size_t at = static_cast<std::size_t>(y) * width_ + x;
    pixels_[at] = colour.r;
    pixels_[plane_size() + at] = colour.g;
    pixels_[2 * plane_size() + at] = colour.b;
  }
  void blend(std::size_t at, Rgb colour) {
    for (int band = 0; band < 3; ++band) {
      const std::uint8_t tint = band == 0 ? colour.r : band == 1 ? colour.g : colour.b;
      auto& value = pixels_[static_cast<std::size_t>(band) * plane_size() + at];
      value = static_cast<std::uint8_t>((value + tint + 1) / 2);
    }
  }
  [[nodiscard]] void* data() { return pixels_.data(); }

 private:
  int width_;
  int height_;
  std::vector<std::uint8_t> pixels_;
};

GDALDatasetUniquePtr open_raster(const std::string& raster, const std::filesystem::path& png) {
  output::driver("PNG", png);  // also registers every driver before the open
  GDALDatasetUniquePtr dataset(
      GDALDataset::Open(raster.c_str(), GDAL_OF_RASTER | GDAL_OF_VERBOSE_ERROR, nullptr, nullptr, nullptr));
  if (!dataset) output::fail(png, fmt::format("opening raster '{}' failed", raster));
  return dataset;
}

// Never enlarged: a quicklook of a small raster is the raster.
std::pair<int, int> quicklook_size(int width, int height, int max_side) {
  const int longest = std::max(width, height);
  if (longest <= max_side) return {width, height};
  const double scale = static_cast<double>(max_side) / longest;
  return {std::clamp(static_cast<int>(std::lround(width * scale)), 1, max_side),
          std::clamp(static_cast<int>(std::lround(height * scale)), 1, max_side)};
}

std::vector<double> read_band(GDALRasterBand& band, const Picture& picture, GDALRIOResampleAlg resampling,
                              const std::filesystem::path& png, const std::string& raster) {
  std::vector<double> values(picture.plane_size());
  GDALRasterIOExtraArg extra;
  INIT_RASTERIO_EXTRA_ARG(extra);
  extra.eResampleAlg = resampling;
  if (band.RasterIO(GF_Read, 0, 0, band.GetXSize(), band.GetYSize(), values.data(), picture.width(), picture.height(),
                    GDT_Float64, 0, 0, &extra) != CE_None) {
    output::fail(png, fmt::format("reading band {} of '{}' failed", band.GetBand(), raster));
  }
  return values;
}

// Byte rasters are shown as they are (an RGB photograph keeps its colours); other types
// are stretched per band between the 2nd and 98th percentiles, so a few extreme pixels
// do not leave the rest of a 16-bit or float image dark.
void stretch_into(std::uint8_t* out, const std::vector<double>& values, GDALRasterBand& band) {
  int has_nodata = 0;
  const double nodata = band.GetNoDataValue(&has_nodata);
  const auto valid = [&](double value) { return !std::isnan(value) && !(has_nodata != 0 && value == nodata); };
  double low = 0;
  double high = 255;
  if (band.GetRasterDataType() != GDT_Byte) {
    std::vector<double> sorted;
    sorted.reserve(values.size());
    std::copy_if(values.begin(), values.end(), std::back_inserter(sorted), valid);
    if (!sorted.empty()) {
      const auto at = [&](double fraction) {
        auto nth = sorted.begin() + static_cast<std::ptrdiff_t>(fraction * static_cast<double>(sorted.size() - 1));
        std::nth_element(sorted.begin(), nth, sorted.end());
        return *nth;
      };
      low = at(0.02);
      high = at(0.98);
    }
    if (high <= low) high = low + 1;
  }
  const double scale = 255.0 / (high - low);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double shown = valid(values[i]) ? std::clamp((values[i] - low) * scale, 0.0, 255.0) : 0.0;
    out[i] = static_cast<std::uint8_t>(std::lround(shown));
  }
}

// Averaging (not nearest) so that a strongly reduced orthomosaic shows its areas' mean
// colour rather than aliased single pixels; the I/O is the same, as GDAL reads every
// block (or an overview, when there is one) either way.
Picture read_picture(GDALDataset& dataset, const QuicklookSource& source, const std::filesystem::path& png) {
  if (source.max_side < 1) throw std::invalid_argument(fmt::format("'{}': max_side must be positive", png.string()));
  if (source.bands.size() != 1 && source.bands.size() != 3) {
    throw std::invalid_argument(fmt::format("'{}': a quicklook shows 1 or 3 bands, not {} (bands={})", png.string(),
                                            source.bands.size(), fmt::join(source.bands, ",")));
  }
  for (const int band : source.bands) {
    if (band < 1 || band > dataset.GetRasterCount()) {
      throw std::invalid_argument(fmt::format("'{}': raster '{}' has no band {}", png.string(), source.raster, band));
    }
  }
  const auto [width, height] = quicklook_size(dataset.GetRasterXSize(), dataset.GetRasterYSize(), source.max_side);
  Picture picture(width, height);
  for (int shown = 0; shown < 3; ++shown) {
    const int band_number = source.bands[source.bands.size() == 1 ? 0 : static_cast<std::size_t>(shown)];
    auto& band = *dataset.GetRasterBand(band_number);
    stretch_into(picture.plane(shown), read_band(band, picture, GRIORA_Average, png, source.raster), band);
  }
  return picture;
}

void draw_outline(Picture& picture, const Box& box, double scale_x, double scale_y) {
  constexpr int kThickness = 2;
  const Rgb colour = palette_colour(box.label);
  const int left = static_cast<int>(std::floor(box.x1 * scale_x));
  const int top = static_cast<int>(std::floor(box.y1 * scale_y));
  const int right = std::max(left, static_cast<int>(std::ceil(box.x2 * scale_x)) - 1);
  const int bottom = std::max(top, static_cast<int>(std::ceil(box.y2 * scale_y)) - 1);
  for (int inset = 0; inset < kThickness; ++inset) {
    for (int x = left; x <= right; ++x) {
      picture.set(x, top + inset, colour);
      picture.set(x, bottom - inset, colour);
    }
    for (int y = top; y <= bottom; ++y) {
      picture.set(left + inset, y, colour);
      picture.set(right - inset, y, colour);
    }
  }
}

void write_png(const std::filesystem::path& png, Picture& picture) {
  auto& mem = output::driver("MEM", png);
  auto& png_driver = output::driver("PNG", png);
  GDALDatasetUniquePtr memory(mem.Create("", picture.width(), picture.height(), 3, GDT_Byte, nullptr));
  if (!memory) output::fail(png, "creating the picture in memory failed");
  if (memory->RasterIO(GF_Write, 0, 0, picture.width(), picture.height(), picture.data(), picture.width(),
                       picture.height(), GDT_Byte, 3, nullptr, 0, 0, 0, nullptr) != CE_None) {
    output::fail(png, "filling the picture failed");
  }
  output::PartialFile partial(png);
  GDALDatasetUniquePtr written(
      png_driver.CreateCopy(partial.path().c_str(), memory.get(), FALSE, nullptr, nullptr, nullptr));
  if (!written) output::fail(png, "encoding the PNG failed");
  output::close(written, png);
  partial.commit();
}

}  // namespace

void write_box_quicklook(const std::filesystem::path& png, const QuicklookSource& source, std::span<const Box> boxes) {
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  const auto dataset = open_raster(source.raster, png);
  Picture picture = read_picture(*dataset, source, png);
  const double scale_x = static_cast<double>(picture.width()) / dataset->GetRasterXSize();
  const double scale_y = static_cast<double>(picture.height()) / dataset->GetRasterYSize();
  for (const auto& box : boxes) draw_outline(picture, box, scale_x, scale_y);
  write_png(png, picture);
}

void write_mask_quicklook(const std::filesystem::path& png, const QuicklookSource& source,
                          const std::filesystem::path& classes) {
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  const auto dataset = open_raster(source.raster, png);
  const auto mask = open_raster(classes.string(), png);
  if (mask->GetRasterXSize() != dataset->GetRasterXSize() || mask->GetRasterYSize() != dataset->GetRasterYSize() ||
      mask->GetRasterCount() < 1) {
    throw std::invalid_argument(fmt::format("'{}': classes '{}' ({}x{}) do not match raster '{}' ({}x{})", png.string(),
                                            classes.string(), mask->GetRasterXSize(), mask->GetRasterYSize(),
                                            source.raster, dataset->GetRasterXSize(), dataset->GetRasterYSize()));
  }
  Picture picture = read_picture(*dataset, source, png);
  // Nearest: an average of class numbers is not a class.
  const auto values = read_band(*mask->GetRasterBand(1), picture, GRIORA_NearestNeighbour, png, classes.string());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto value = values[i];
    if (value > 0 && value != kNoClass) picture.blend(i, palette_colour(static_cast<std::int64_t>(value)));
  }
  write_png(png, picture);
}

}  // namespace mgpr::runtime
