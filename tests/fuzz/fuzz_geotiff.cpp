// A GeoTIFF's header as the CRS cache reads it (the byte order, the first image's tag
// directory, the GeoKey tags) without GDAL, from any raster a user names: the bytes go to
// a file, since the reader takes a path and reads at the offsets the file gives.
#include "fuzz_input.hpp"
#include "source/crs_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static mgpr::fuzz::InputFile file("raster.tif");
  const auto& path = file.write(data, size);
  // The reader refuses with nullopt, never by throwing: GDAL reads the file afterwards
  // and says what is wrong with it.
  const auto keys = mgpr::runtime::geotiff_keys(path.string());
  if (!keys) return 0;
  // A key says its byte order and holds the GeoKey directory, the one tag it needs.
  if (keys->empty() || ((*keys)[0] != 'I' && (*keys)[0] != 'M')) __builtin_trap();
  if (keys->find("34735:") == std::string::npos) __builtin_trap();
  // The same bytes give the same key: the cache shares CRSs by it.
  if (mgpr::runtime::geotiff_keys(path.string()) != keys) __builtin_trap();
  return 0;
}
