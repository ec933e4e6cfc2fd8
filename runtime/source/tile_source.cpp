#include "source/tile_source.hpp"

#include "mgpr/error.hpp"
#include "source/fake_source.hpp"

#ifdef MGPR_HAVE_GDAL
#include "source/raster_source.hpp"
#endif

namespace mgpr::runtime {

std::optional<std::vector<double>> values_per_band(const std::vector<double>& values, std::size_t bands,
                                                   double fallback) {
  if (values.empty()) return std::vector<double>(bands, fallback);
  if (values.size() == 1) return std::vector<double>(bands, values.front());
  if (values.size() == bands) return values;
  return std::nullopt;
}

std::unique_ptr<TileSource> make_tile_source(const SourceOptions& options) {
  if (options.fake) return make_fake_source(*options.fake, options.tile_size, options.raw_samples);
#ifdef MGPR_HAVE_GDAL
  return make_raster_source(options);
#else
  throw UsageError(
      "this mgpr was built without GDAL (MGPR_WITH_GDAL=OFF) and reads fake data only, so it cannot read " +
      (options.rasters.empty() ? std::string("rasters") : "'" + options.rasters.front() + "'") +
      "; pass use_fake_data=true, or use a build with GDAL");
#endif
}

}  // namespace mgpr::runtime
