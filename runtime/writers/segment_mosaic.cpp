#include "writers/segment_mosaic.hpp"

#include <cpl_string.h>
#include <fmt/format.h>
#include <gdal_utils.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "mgpr/error.hpp"
#include "writers/gdal_write.hpp"

namespace mgpr::runtime {
namespace {

void check_piece(const std::filesystem::path& file, const PixelWindow& core, std::size_t values) {
  if (core.width < 1 || core.height < 1) {
    throw std::invalid_argument(fmt::format("'{}': empty core {}x{}", file.string(), core.width, core.height));
  }
  if (values != static_cast<std::size_t>(core.width) * static_cast<std::size_t>(core.height)) {
    throw std::invalid_argument(
        fmt::format("'{}': {} values for a {}x{} core", file.string(), values, core.width, core.height));
  }
}

void write_piece(const std::filesystem::path& file, const PixelWindow& core, const void* values, GDALDataType type,
                 const RasterGeoreference& georef, bool classes) {
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  auto& gtiff = output::driver("GTiff", file);
  CPLStringList creation;
  creation.AddNameValue("COMPRESS", "DEFLATE");
  output::PartialFile partial(file);
  GDALDatasetUniquePtr dataset(gtiff.Create(partial.path().c_str(), core.width, core.height, 1, type, creation.List()));
  if (!dataset) output::fail(file, "creating the GeoTIFF failed");
  auto terms = georef.transform.shifted(core.x, core.y).terms();
  if (dataset->SetGeoTransform(terms.data()) != CE_None) output::fail(file, "setting its geotransform failed");
  if (!georef.crs_wkt.empty() && dataset->SetProjection(georef.crs_wkt.c_str()) != CE_None) {
    output::fail(file, "setting its CRS failed");
  }
  auto* band = dataset->GetRasterBand(1);
  if (classes && band->SetNoDataValue(kNoClass) != CE_None) output::fail(file, "setting its nodata value failed");
  if (band->RasterIO(GF_Write, 0, 0, core.width, core.height, const_cast<void*>(values), core.width, core.height, type,
                     0, 0, nullptr) != CE_None) {
    output::fail(file, "writing its pixels failed");
  }
  output::close(dataset, file);
  partial.commit();
}

std::string xml_escaped(const std::string& text) {
  std::unique_ptr<char, decltype(&CPLFree)> escaped(CPLEscapeString(text.c_str(), -1, CPLES_XML), &CPLFree);
  return escaped.get();
}

// GDAL resolves relativeToVRT paths by joining them to the VRT's folder, so the same
// lexical relation is what keeps the mosaic readable after its folder moves.
std::string source_name(const std::filesystem::path& piece, const std::filesystem::path& vrt_folder) {
  const auto absolute_piece = std::filesystem::absolute(piece).lexically_normal();
  return absolute_piece.lexically_relative(vrt_folder).string();
}

// The VRT up to the band's sources: size, CRS, geotransform, the band's type, nodata,
// and for named classes their category names and attribute table. GDAL keeps both
// through gdal_translate; QGIS shows the table (Layer Properties, and "Classify" from it).
std::string vrt_head(int width, int height, const RasterGeoreference& georef, bool probabilities,
                     std::span<const std::string> class_names) {
  std::string xml = fmt::format("<VRTDataset rasterXSize=\"{}\" rasterYSize=\"{}\">\n", width, height);
  if (!georef.crs_wkt.empty()) xml += fmt::format("  <SRS>{}</SRS>\n", xml_escaped(georef.crs_wkt));
  // Left out for the identity, so an input without georeferencing gives an output without.
  if (!georef.transform.is_identity()) {
    const auto& t = georef.transform.terms();
    xml += fmt::format("  <GeoTransform>{:.17g}, {:.17g}, {:.17g}, {:.17g}, {:.17g}, {:.17g}</GeoTransform>\n", t[0],
                       t[1], t[2], t[3], t[4], t[5]);
  }
  xml += fmt::format("  <VRTRasterBand dataType=\"{}\" band=\"1\">\n", probabilities ? "Float32" : "Byte");
  if (!probabilities) xml += fmt::format("    <NoDataValue>{}</NoDataValue>\n", kNoClass);
  xml += "    <ColorInterp>Gray</ColorInterp>\n";
  if (probabilities || class_names.empty()) return xml;
  // A byte band holds values up to 254 (255 is nodata): names past them name nothing.
  const auto named = std::min<std::size_t>(class_names.size(), kNoClass);
  xml += "    <CategoryNames>\n";
  for (std::size_t value = 0; value < named; ++value) {
    xml += fmt::format("      <Category>{}</Category>\n", xml_escaped(class_names[value]));
  }
  xml += "    </CategoryNames>\n";
  // Types and usages are GDAL's enums: GFT_Integer 0, GFT_String 2; GFU_MinMax 5, GFU_Name 2.
  xml +=
      "    <GDALRasterAttributeTable tableType=\"thematic\">\n"
      "      <FieldDefn index=\"0\"><Name>value</Name><Type>0</Type><Usage>5</Usage></FieldDefn>\n"
      "      <FieldDefn index=\"1\"><Name>class_name</Name><Type>2</Type><Usage>2</Usage></FieldDefn>\n";
  for (std::size_t value = 0; value < named; ++value) {
    xml += fmt::format("      <Row index=\"{0}\"><F>{0}</F><F>{1}</F></Row>\n", value, xml_escaped(class_names[value]));
  }
  xml += "    </GDALRasterAttributeTable>\n";
  return xml;
}

void write_xml_atomically(const std::filesystem::path& vrt, const std::string& xml) {
  output::PartialFile partial(vrt);
  {
    std::ofstream out(partial.path(), std::ios::binary | std::ios::trunc);
    out << xml;
    out.close();
    if (!out) {
      throw std::runtime_error(
          fmt::format("cannot write '{}': writing '{}' failed; check that the folder exists and "
                      "is writable",
                      vrt.string(), partial.path().string()));
    }
  }
  partial.commit();
}

std::string vrt_xml(const std::filesystem::path& vrt, std::span<const MosaicPiece> pieces, int width, int height,
                    const RasterGeoreference& georef, bool probabilities, std::span<const std::string> class_names) {
  const char* type = probabilities ? "Float32" : "Byte";
  std::string xml = vrt_head(width, height, georef, probabilities, class_names);
  const auto folder = std::filesystem::absolute(vrt).lexically_normal().parent_path();
  for (const auto& piece : pieces) {
    const auto& core = piece.core;
    if (core.width < 1 || core.height < 1 || core.x < 0 || core.y < 0 || core.x + core.width > width ||
        core.y + core.height > height) {
      throw std::invalid_argument(fmt::format("'{}': piece '{}' at {},{} ({}x{}) lies outside the {}x{} mosaic",
                                              vrt.string(), piece.file.string(), core.x, core.y, core.width,
                                              core.height, width, height));
    }
    // SourceProperties lets GDAL open a piece only when its pixels are read, so opening
    // a mosaic of thousands of pieces costs nothing.
    xml += fmt::format(
        "    <SimpleSource>\n"
        "      <SourceFilename relativeToVRT=\"1\">{}</SourceFilename>\n"
        "      <SourceBand>1</SourceBand>\n"
        "      <SourceProperties RasterXSize=\"{}\" RasterYSize=\"{}\" DataType=\"{}\"/>\n"
        "      <SrcRect xOff=\"0\" yOff=\"0\" xSize=\"{}\" ySize=\"{}\"/>\n"
        "      <DstRect xOff=\"{}\" yOff=\"{}\" xSize=\"{}\" ySize=\"{}\"/>\n"
        "    </SimpleSource>\n",
        xml_escaped(source_name(piece.file, folder)), core.width, core.height, type, core.width, core.height, core.x,
        core.y, core.width, core.height);
  }
  xml += "  </VRTRasterBand>\n</VRTDataset>\n";
  return xml;
}

}  // namespace

void write_class_piece(const std::filesystem::path& file, const PixelWindow& core,
                       std::span<const std::uint8_t> classes, const RasterGeoreference& georef) {
  check_piece(file, core, classes.size());
  write_piece(file, core, classes.data(), GDT_Byte, georef, true);
}

void write_probability_piece(const std::filesystem::path& file, const PixelWindow& core,
                             std::span<const float> probabilities, const RasterGeoreference& georef) {
  check_piece(file, core, probabilities.size());
  write_piece(file, core, probabilities.data(), GDT_Float32, georef, false);
}

void write_mosaic_vrt(const std::filesystem::path& vrt, std::span<const MosaicPiece> pieces, int width, int height,
                      const RasterGeoreference& georef, bool probabilities, std::span<const std::string> class_names) {
  if (width < 1 || height < 1) {
    throw std::invalid_argument(fmt::format("'{}': empty mosaic {}x{}", vrt.string(), width, height));
  }
  write_xml_atomically(vrt, vrt_xml(vrt, pieces, width, height, georef, probabilities, class_names));
}

void write_resampled_vrt(const std::filesystem::path& vrt, const std::filesystem::path& source, const MosaicGrid& from,
                         const MosaicGrid& to, const std::string& crs_wkt, bool probabilities,
                         std::span<const std::string> class_names) {
  if (from.width < 1 || from.height < 1 || to.width < 1 || to.height < 1) {
    throw std::invalid_argument(
        fmt::format("'{}': empty grid ({}x{} to {}x{})", vrt.string(), from.width, from.height, to.width, to.height));
  }
  // Where `from`'s pixels lie in `to`'s: for a grid that is `to` with other pixel sizes,
  // an offset and a scale per axis, which a VRT source says with a destination window.
  const auto at = [&](double column, double row) {
    const auto map = from.transform.to_map(column, row);
    return to.transform.to_pixel(map.x, map.y);
  };
  const auto origin = at(0, 0);
  const auto right = at(from.width, 0);
  const auto down = at(0, from.height);
  // A hundredth of a pixel over the whole grid: a grid turned against `to` needs a warp.
  if (std::abs(right.y - origin.y) > 0.01 || std::abs(down.x - origin.x) > 0.01 || right.x <= origin.x ||
      down.y <= origin.y) {
    throw std::invalid_argument(fmt::format(
        "'{}': the mosaic's grid is turned against the raster's own, so it cannot be put back on it by scaling",
        vrt.string()));
  }
  const auto folder = std::filesystem::absolute(vrt).lexically_normal().parent_path();
  std::string xml = vrt_head(to.width, to.height, {to.transform, crs_wkt}, probabilities, class_names);
  const char* type = probabilities ? "Float32" : "Byte";
  // resampling="nearest": GDAL's default for a simple source, said for whoever reads the file.
  xml += fmt::format(
      "    <SimpleSource resampling=\"nearest\">\n"
      "      <SourceFilename relativeToVRT=\"1\">{}</SourceFilename>\n"
      "      <SourceBand>1</SourceBand>\n"
      "      <SourceProperties RasterXSize=\"{}\" RasterYSize=\"{}\" DataType=\"{}\"/>\n"
      "      <SrcRect xOff=\"0\" yOff=\"0\" xSize=\"{}\" ySize=\"{}\"/>\n"
      "      <DstRect xOff=\"{:.17g}\" yOff=\"{:.17g}\" xSize=\"{:.17g}\" ySize=\"{:.17g}\"/>\n"
      "    </SimpleSource>\n"
      "  </VRTRasterBand>\n</VRTDataset>\n",
      xml_escaped(source_name(source, folder)), from.width, from.height, type, from.width, from.height, origin.x,
      origin.y, right.x - origin.x, down.y - origin.y);
  write_xml_atomically(vrt, xml);
}

namespace {

// Removes a file on destruction unless it is gone by then (renamed into place).
class RemovedUnlessMoved {
 public:
  explicit RemovedUnlessMoved(std::filesystem::path file) : file_(std::move(file)) {}
  ~RemovedUnlessMoved() {
    std::error_code ignored;
    std::filesystem::remove(file_, ignored);
  }
  RemovedUnlessMoved(const RemovedUnlessMoved&) = delete;
  RemovedUnlessMoved& operator=(const RemovedUnlessMoved&) = delete;

 private:
  std::filesystem::path file_;
};

int CPL_STDCALL stop_when_asked(double /*done*/, const char* /*message*/, void* stop_requested) {
  const auto& asked = *static_cast<const output::StopRequested*>(stop_requested);
  return asked && asked() ? FALSE : TRUE;
}

}  // namespace

void write_cog(const std::filesystem::path& vrt, const std::filesystem::path& cog,
               const output::StopRequested& stop_requested) {
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  output::driver("COG", cog);
  GDALDatasetUniquePtr source(
      GDALDataset::Open(vrt.c_str(), GDAL_OF_RASTER | GDAL_OF_VERBOSE_ERROR, nullptr, nullptr, nullptr));
  if (!source) output::fail(cog, fmt::format("opening the mosaic '{}' failed", vrt.string()));
  if (source->GetRasterCount() < 1) output::fail(cog, fmt::format("the mosaic '{}' has no band", vrt.string()));
  // The COG driver's default overview resampling (cubic) would invent class values
  // between neighbouring classes; class overviews keep real classes.
  const bool classes = source->GetRasterBand(1)->GetRasterDataType() == GDT_Byte;
  CPLStringList arguments;
  // BIGTIFF=IF_NEEDED, the default, cannot foresee a compressed file passing 4 GiB and
  // then fails at the end of a long copy; IF_SAFER decides on the uncompressed size.
  for (const char* argument : {"-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "BIGTIFF=IF_SAFER", "-co"}) {
    arguments.AddString(argument);
  }
  arguments.AddString(classes ? "RESAMPLING=NEAREST" : "RESAMPLING=AVERAGE");
  std::unique_ptr<GDALTranslateOptions, decltype(&GDALTranslateOptionsFree)> options(
      GDALTranslateOptionsNew(arguments.List(), nullptr), &GDALTranslateOptionsFree);
  if (!options) output::fail(cog, "GDAL rejected the COG options");
  GDALTranslateOptionsSetProgress(options.get(), stop_when_asked, const_cast<output::StopRequested*>(&stop_requested));

  output::PartialFile partial(cog);
  // GeoTIFF keeps category names and attribute tables in a side-car, which GDAL writes
  // beside the partial file when it closes it; removed unless it was renamed.
  const std::filesystem::path partial_side_car = partial.path().string() + ".aux.xml";
  const RemovedUnlessMoved side_car_guard(partial_side_car);
  int usage_error = 0;
  CPLErrorReset();
  GDALDatasetUniquePtr written(GDALDataset::FromHandle(
      GDALTranslate(partial.path().c_str(), GDALDataset::ToHandle(source.get()), options.get(), &usage_error)));
  // The COG driver copies through a temporary GeoTIFF and hands back a dataset even when
  // a write inside failed (a full disk left a 4 KiB COG that looked complete): its
  // errors count, and output::close would clear them.
  const bool copy_failed = CPLGetLastErrorType() >= CE_Failure;
  // Only a copy the progress callback cut short is a stop; a COG that completed as the
  // stop arrived is kept.
  if (!written && stop_requested && stop_requested()) {
    throw StoppedOnRequest(
        fmt::format("writing '{}' stopped on request before it was complete; the mosaic '{}' "
                    "is complete, and running the same command again writes it",
                    cog.string(), vrt.string()));
  }
  if (!written || usage_error != 0 || copy_failed) {
    output::fail(cog, fmt::format("copying the mosaic '{}' failed", vrt.string()));
  }
  output::close(written, cog);
  // The side-car takes its name first, so a COG never appears without it; a stale one of
  // an earlier run with names would name the classes of this one.
  const std::filesystem::path side_car = cog.string() + ".aux.xml";
  if (std::filesystem::exists(partial_side_car)) {
    std::filesystem::rename(partial_side_car, side_car);
  } else {
    std::filesystem::remove(side_car);
  }
  partial.commit();
}

}  // namespace mgpr::runtime
