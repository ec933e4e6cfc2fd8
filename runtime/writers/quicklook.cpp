#include "writers/quicklook.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string_view>

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

// 5x7 glyphs of printable ASCII (space to '~'), one number each: 35 bits, row 0 in the
// top five, a row's leftmost pixel its highest bit. Built in: a legend of a few words
// does not justify a font library, and the PNG stays the same on every machine.
constexpr std::array<std::uint64_t, 95> kGlyphs{{
    0x000000000, 0x108421004, 0x294a00000, 0x295f57d4a, 0x11f4717c4, 0x632222263, 0x32544564d, 0x108800000, 0x088842082,
    0x208210888, 0x009575480, 0x0084f9080, 0x000003088, 0x0000f8000, 0x00000018c, 0x002222200, 0x3a33ae62e, 0x11842108e,
    0x3a211111f, 0x7c441062e, 0x08ca97c42, 0x7e1e0862e, 0x1910f462e, 0x7c2222108, 0x3a317462e, 0x3a317844c, 0x018c03180,
    0x018c03088, 0x088882082, 0x001f07c00, 0x208208888, 0x3a2111004, 0x3a216d6ae, 0x3a31fc631, 0x7a31f463e, 0x3a308422e,
    0x72518c65c, 0x7e10f421f, 0x7e10f4210, 0x3a30bc62f, 0x4631fc631, 0x38842108e, 0x1c4210a4c, 0x4654c5251, 0x42108421f,
    0x4775ac631, 0x4639ace31, 0x3a318c62e, 0x7a31f4210, 0x3a318d64d, 0x7a31f5251, 0x3e107043e, 0x7c8421084, 0x46318c62e,
    0x46318c544, 0x4631ad6aa, 0x462a22a31, 0x463151084, 0x7c222221f, 0x39084210e, 0x020820820, 0x38421084e, 0x115100000,
    0x00000001f, 0x208200000, 0x000e0be2f, 0x4216cc63e, 0x000e8422e, 0x042d9c62f, 0x000e8fe0e, 0x1928e2108, 0x01f18bc2e,
    0x4216cc631, 0x100c2108e, 0x080610a4c, 0x4212a6292, 0x30842108e, 0x001aad631, 0x0016cc631, 0x000e8c62e, 0x001e8fa10,
    0x000d9bc21, 0x0016cc210, 0x000e8383e, 0x211c42126, 0x00118c66d, 0x00118c544, 0x00118d6aa, 0x001151151, 0x00118bc2e,
    0x001f1111f, 0x088441082, 0x108421084, 0x208411088, 0x0008a8800,
}};
constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 7;

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
  // Halfway to black, so white text reads on any photograph.
  void darken(int x, int y) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    const std::size_t at = static_cast<std::size_t>(y) * width_ + x;
    for (int band = 0; band < 3; ++band) {
      auto& value = pixels_[static_cast<std::size_t>(band) * plane_size() + at];
      value = static_cast<std::uint8_t>(value / 3);
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

// `text` from (x, y), its top-left corner, each glyph pixel a `scale` x `scale` square.
// Bytes outside printable ASCII show as '?', a UTF-8 character as one '?'.
void draw_text(Picture& picture, int x, int y, std::string_view text, int scale, Rgb colour) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80 && byte < 0xC0) continue;  // a UTF-8 continuation byte
    const auto glyph = kGlyphs[byte >= 32 && byte < 127 ? byte - 32 : '?' - 32];
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int column = 0; column < kGlyphWidth; ++column) {
        const int bit = (kGlyphHeight - 1 - row) * kGlyphWidth + (kGlyphWidth - 1 - column);
        if (((glyph >> bit) & 1U) == 0) continue;
        for (int dy = 0; dy < scale; ++dy) {
          for (int dx = 0; dx < scale; ++dx) picture.set(x + column * scale + dx, y + row * scale + dy, colour);
        }
      }
    }
    x += (kGlyphWidth + 1) * scale;
  }
}

// Characters of `text` as draw_text counts them.
std::size_t shown_length(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U; }));
}

// The first `characters` of `text` as draw_text counts them; cut ones end in '~'.
std::string shown_prefix(std::string_view text, std::size_t characters) {
  if (shown_length(text) <= characters) return std::string(text);
  std::string out;
  std::size_t count = 0;
  for (const char c : text) {
    const bool starts = (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
    if (starts && ++count >= characters) break;
    out += c;
  }
  return out + "~";
}

// The legend in the top-left corner: per label drawn, a swatch of its colour, its number
// and its name, on a darkened panel. Drawn into the PNG rather than written beside it,
// so the picture explains itself wherever it goes (the job's HTML report embeds it).
// Rows that do not fit are summed up in a last row "+N more".
void draw_legend(Picture& picture, const std::set<std::int64_t>& labels, const std::vector<std::string>& names) {
  if (labels.empty() || names.empty()) return;
  // Legible at a glance on a 1024 px quicklook, and not a third of a small one.
  const int scale = std::max(1, std::max(picture.width(), picture.height()) / 512);
  const int pad = 2 * scale;
  const int line = (kGlyphHeight + 3) * scale;
  const int swatch = kGlyphHeight * scale;
  const int advance = (kGlyphWidth + 1) * scale;
  const int text_x = pad + swatch + 2 * scale;
  const int max_chars = (picture.width() - text_x - pad) / advance;
  const int max_rows = (picture.height() - 2 * pad + 3 * scale) / line;
  if (max_chars < 3 || max_rows < 1) return;  // a picture of a few pixels has no room
  std::vector<std::pair<std::int64_t, std::string>> rows;
  for (const auto label : labels) {
    const auto at = static_cast<std::uint64_t>(label);
    const bool named = label >= 0 && at < names.size() && !names[at].empty();
    rows.emplace_back(label, named ? fmt::format("{} {}", label, names[at]) : std::to_string(label));
  }
  const bool more = static_cast<int>(rows.size()) > max_rows;
  if (more) {
    const auto kept = static_cast<std::size_t>(max_rows - 1);
    const auto left_out = rows.size() - kept;
    rows.resize(kept);
    rows.emplace_back(0, fmt::format("+{} more", left_out));
  }
  std::size_t longest = 0;
  for (auto& row : rows) {
    row.second = shown_prefix(row.second, static_cast<std::size_t>(max_chars));
    longest = std::max(longest, shown_length(row.second));
  }
  const int panel_width = text_x + static_cast<int>(longest) * advance - scale + pad;
  const int panel_height = 2 * pad + static_cast<int>(rows.size()) * line - 3 * scale;
  for (int y = 0; y < panel_height; ++y) {
    for (int x = 0; x < panel_width; ++x) picture.darken(x, y);
  }
  constexpr Rgb kWhite{255, 255, 255};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int top = pad + static_cast<int>(i) * line;
    if (!(more && i + 1 == rows.size())) {
      const Rgb colour = palette_colour(rows[i].first);
      for (int y = 0; y < swatch; ++y) {
        for (int x = 0; x < swatch; ++x) picture.set(pad + x, top + y, colour);
      }
    }
    draw_text(picture, text_x, top, rows[i].second, scale, kWhite);
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

std::pair<int, int> grid_of(const QuicklookSource& source, GDALDataset& dataset) {
  if (source.grid_width > 0 && source.grid_height > 0) return {source.grid_width, source.grid_height};
  return {dataset.GetRasterXSize(), dataset.GetRasterYSize()};
}

}  // namespace

void write_box_quicklook(const std::filesystem::path& png, const QuicklookSource& source, std::span<const Box> boxes) {
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  const auto dataset = open_raster(source.raster, png);
  Picture picture = read_picture(*dataset, source, png);
  const auto [grid_width, grid_height] = grid_of(source, *dataset);
  const double scale_x = static_cast<double>(picture.width()) / grid_width;
  const double scale_y = static_cast<double>(picture.height()) / grid_height;
  std::set<std::int64_t> labels;
  for (const auto& box : boxes) {
    draw_outline(picture, box, scale_x, scale_y);
    labels.insert(box.label);
  }
  draw_legend(picture, labels, source.class_names);
  write_png(png, picture);
}

void write_mask_quicklook(const std::filesystem::path& png, const QuicklookSource& source,
                          const std::filesystem::path& classes) {
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  const auto dataset = open_raster(source.raster, png);
  const auto mask = open_raster(classes.string(), png);
  const auto [grid_width, grid_height] = grid_of(source, *dataset);
  if (mask->GetRasterXSize() != grid_width || mask->GetRasterYSize() != grid_height || mask->GetRasterCount() < 1) {
    throw std::invalid_argument(fmt::format("'{}': classes '{}' ({}x{}) do not match raster '{}' ({}x{})", png.string(),
                                            classes.string(), mask->GetRasterXSize(), mask->GetRasterYSize(),
                                            source.raster, grid_width, grid_height));
  }
  Picture picture = read_picture(*dataset, source, png);
  // Nearest: an average of class numbers is not a class.
  const auto values = read_band(*mask->GetRasterBand(1), picture, GRIORA_NearestNeighbour, png, classes.string());
  std::set<std::int64_t> shown;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto value = values[i];
    if (value > 0 && value != kNoClass) {
      picture.blend(i, palette_colour(static_cast<std::int64_t>(value)));
      shown.insert(static_cast<std::int64_t>(value));
    }
  }
  draw_legend(picture, shown, source.class_names);
  write_png(png, picture);
}

}  // namespace mgpr::runtime
