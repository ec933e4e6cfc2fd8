#include "source/crs_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <fmt/format.h>
#include <gdal_pam.h>

#include <cstdint>
#include <limits>
#include <string_view>

#include "mgpr/input_kind.hpp"

namespace mgpr::runtime {

std::optional<std::string> geotiff_keys(const std::string& path) {
  const int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return std::nullopt;
  struct Closer {
    int file;
    ~Closer() { ::close(file); }
  } const closer{file};
  const auto read_at = [&](std::uint64_t offset, std::size_t size, std::string& into) {
    into.resize(size);
    return offset <= static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) &&
           ::pread(file, into.data(), size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
  };
  std::string header;
  if (!read_at(0, 8, header)) return std::nullopt;
  const bool little = header.starts_with("II");
  if (!little && !header.starts_with("MM")) return std::nullopt;
  const auto number = [little](const char* bytes, int size) {
    std::uint64_t value = 0;
    for (int i = 0; i < size; ++i) {
      const auto byte = static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[little ? size - 1 - i : i]));
      value = (value << 8) | byte;
    }
    return value;
  };
  const auto version = number(header.data() + 2, 2);
  const bool big_tiff = version == 43;
  if (version != 42 && !big_tiff) return std::nullopt;
  std::uint64_t directory = number(header.data() + 4, 4);
  if (big_tiff) {
    if (number(header.data() + 4, 2) != 8 || !read_at(8, 8, header)) return std::nullopt;
    directory = number(header.data(), 8);
  }
  const int count_size = big_tiff ? 8 : 2;
  const int entry_size = big_tiff ? 20 : 12;
  const int value_size = big_tiff ? 8 : 4;
  std::string entries;
  if (!read_at(directory, static_cast<std::size_t>(count_size), entries)) return std::nullopt;
  const auto entry_count = number(entries.data(), count_size);
  if (entry_count == 0 || entry_count > 4096 ||
      !read_at(directory + static_cast<std::uint64_t>(count_size), entry_count * entry_size, entries)) {
    return std::nullopt;
  }
  std::string key(1, little ? 'I' : 'M');
  bool has_directory = false;
  for (std::uint64_t i = 0; i < entry_count; ++i) {
    const char* entry = entries.data() + i * entry_size;
    const auto tag = number(entry, 2);
    if (tag != 34735 && tag != 34736 && tag != 34737) continue;
    // SHORT, DOUBLE and ASCII, as the GeoTIFF specification has them; anything else is
    // left to GDAL.
    const auto type = number(entry + 2, 2);
    const int item_size = tag == 34735 ? 2 : tag == 34736 ? 8 : 1;
    if (type != (tag == 34735 ? 3U : tag == 34736 ? 12U : 2U)) return std::nullopt;
    const auto items = number(entry + 4, value_size);
    if (items > (std::uint64_t{1} << 20)) return std::nullopt;
    const auto bytes = items * item_size;
    const char* value = entry + 4 + value_size;
    std::string data;
    if (bytes <= static_cast<std::uint64_t>(value_size)) {
      data.assign(value, bytes);
    } else if (!read_at(number(value, value_size), bytes, data)) {
      return std::nullopt;
    }
    has_directory = has_directory || tag == 34735;
    key += fmt::format("{}:{}:", tag, bytes);
    key += data;
  }
  if (!has_directory) return std::nullopt;
  return key;
}

RasterCrs raster_crs_of(const OGRSpatialReference* srs) {
  RasterCrs crs;
  if (srs == nullptr) return crs;
  crs.present = true;
  char* wkt = nullptr;
  if (srs->exportToWkt(&wkt) == OGRERR_NONE && wkt != nullptr) crs.wkt = wkt;
  CPLFree(wkt);
  crs.units = crs_units(srs);
  return crs;
}

RasterCrs CrsCache::crs_of(GDALDataset& dataset, const std::string& path) {
  const auto key = key_of(dataset, path);
  if (key) {
    const std::lock_guard lock(mutex_);
    if (const auto found = known_.find(*key); found != known_.end()) return found->second;
  }
  auto crs = raster_crs_of(dataset.GetSpatialRef());
  if (key && crs.present) {
    const std::lock_guard lock(mutex_);
    known_.emplace(*key, crs);
  }
  return crs;
}

std::optional<std::string> CrsCache::key_of(GDALDataset& dataset, const std::string& path) {
  const auto* driver = dataset.GetDriver();
  if (driver == nullptr || std::string_view(driver->GetDescription()) != "GTiff" ||
      classify_input(path).kind != InputKind::kLocalPath ||
      CPLGetConfigOption("GDAL_GEOREF_SOURCES", nullptr) != nullptr) {
    return std::nullopt;
  }
  // GetGCPCount loads the georeferencing and the PAM sidecars first, as GetSpatialRef does.
  auto* pam = dynamic_cast<GDALPamDataset*>(&dataset);
  if (pam == nullptr || dataset.GetGCPCount() != 0 || pam->GDALPamDataset::GetSpatialRef() != nullptr) {
    return std::nullopt;
  }
  return geotiff_keys(path);
}

}  // namespace mgpr::runtime
