#include "model/host_heap.hpp"

#include <malloc.h>

#include <climits>
#include <cstdlib>
#include <string_view>

namespace mgpr::runtime {
namespace {

// Blocks past this still come from mmap (a batch of sixteen 1024² RGB tiles in fp32 is
// 200 MB): a gigabyte is what glibc 2.36 accepts and an int holds with room to spare.
constexpr int kMmapThreshold = 1 << 30;
// mallopt takes an int: the largest value there is, so the heap's top is kept.
constexpr int kTrimThreshold = INT_MAX;

}  // namespace

bool keep_freed_memory_in_heap() {
  if (const char* tunables = std::getenv("GLIBC_TUNABLES");
      tunables != nullptr && std::string_view(tunables).find("glibc.malloc.") != std::string_view::npos) {
    return false;
  }
  // Either can be refused (another C library's mallopt, an older glibc): the run is then
  // only slower, as it would have been.
  return ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
}

}  // namespace mgpr::runtime
