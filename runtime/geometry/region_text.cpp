#include "geometry/region_text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace mgpr::runtime {
namespace {

constexpr std::string_view kSides = "tblr";

class RegionReader {
 public:
  explicit RegionReader(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

  bool read(RegionPiece& piece) {
    auto& region = piece.region;
    if (!number(region.class_value) || !skip(' ') || !number(region.pixels) || !skip(' ') ||
        !number(region.score_sum) || !skip('|')) {
      return false;
    }
    while (at_ < end_ && *at_ != '|') {
      SeamRun run;
      const auto side = kSides.find(*at_);
      if (side == std::string_view::npos) return false;
      ++at_;
      run.side = static_cast<SeamRun::Side>(side);
      if (!skip(',') || !number(run.line) || !skip(',') || !number(run.begin) || !skip(',') || !number(run.end)) {
        return false;
      }
      region.seams.push_back(run);
      if (at_ < end_ && *at_ == ' ') ++at_;
    }
    if (!skip('|')) return false;
    auto& rings = piece.polygon.rings;
    rings.emplace_back();
    while (at_ < end_ && *at_ != ';') {
      PixelPoint point;
      if (!number(point.x) || !skip(',') || !number(point.y)) return false;
      rings.back().push_back(point);
      if (at_ < end_ && *at_ == ' ') ++at_;
      if (at_ < end_ && *at_ == ':') {
        ++at_;
        rings.emplace_back();
      }
    }
    for (const auto& ring : rings) {
      if (ring.size() < 4 || ring.front() != ring.back()) return false;
    }
    return region.pixels > 0 && region.class_value >= 0 && region.class_value < 256 && std::isfinite(region.score_sum);
  }
  [[nodiscard]] bool done() const { return at_ == end_; }
  bool skip(char wanted) {
    if (at_ == end_ || *at_ != wanted) return false;
    ++at_;
    return true;
  }

 private:
  template <typename Number>
  bool number(Number& value) {
    const auto [stop, error] = std::from_chars(at_, end_, value);
    at_ = stop;
    return error == std::errc();
  }
  const char* at_;
  const char* end_;
};

}  // namespace

void append_region_text(std::string& text, const ClassRegion& region, const PixelPolygon& polygon) {
  if (!text.empty()) text += ';';
  text += fmt::format("{} {} {:.17g}|", region.class_value, region.pixels, region.score_sum);
  for (std::size_t i = 0; i < region.seams.size(); ++i) {
    const auto& run = region.seams[i];
    text += fmt::format("{}{},{},{},{}", i == 0 ? "" : " ", kSides[static_cast<std::size_t>(run.side)], run.line,
                        run.begin, run.end);
  }
  text += '|';
  for (std::size_t r = 0; r < polygon.rings.size(); ++r) {
    if (r != 0) text += ':';
    for (std::size_t p = 0; p < polygon.rings[r].size(); ++p) {
      text += fmt::format("{}{},{}", p == 0 ? "" : " ", polygon.rings[r][p].x, polygon.rings[r][p].y);
    }
  }
}

bool read_region_text(std::string_view text, std::vector<RegionPiece>& into) {
  const auto before = into.size();
  RegionReader reader(text);
  while (!reader.done()) {
    RegionPiece piece;
    if (!reader.read(piece) || (!reader.done() && !reader.skip(';'))) {
      into.resize(before);
      return false;
    }
    into.push_back(std::move(piece));
  }
  return true;
}

}  // namespace mgpr::runtime
