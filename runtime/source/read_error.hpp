#pragma once
// A raster that cannot be read during the run (unreadable, corrupt, a server that gave
// up after its retries): a reader throws this, naming the raster, and the run goes on
// with the other rasters (source/reader_pool.hpp). Any other error stops the rank.
#include <stdexcept>

namespace mgpr::runtime {

class RasterReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mgpr::runtime
