// The class regions of a tile (task=segment, polygons=true) as rank 0 reads them back
// from the results and journals: any bytes, as a crash or a user may leave them. Text it
// accepts must write back to text that reads back the same.
#include "fuzz_input.hpp"
#include "geometry/region_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  std::vector<mgpr::runtime::RegionPiece> pieces;
  if (!mgpr::runtime::read_region_text(text, pieces)) {
    if (!pieces.empty()) __builtin_trap();  // refused text leaves nothing behind
    return 0;
  }
  std::string written;
  for (const auto& piece : pieces) mgpr::runtime::append_region_text(written, piece.region, piece.polygon);
  std::vector<mgpr::runtime::RegionPiece> again;
  if (!mgpr::runtime::read_region_text(written, again) || again != pieces) __builtin_trap();
  return 0;
}
