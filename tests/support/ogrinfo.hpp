#pragma once
// Vector files read back the way a user reads them: GDAL's `ogrinfo -al`, run as a
// program, its text parsed into layers, fields, values and geometries; and a comparison
// of two such layers written in different formats (the same features, fields and
// values; the same vertices, whatever order a format keeps its rings in).
#include <gtest/gtest.h>
#include <stdio.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mgpr::test {

struct OgrFeature {
  std::map<std::string, std::string> values;  // as ogrinfo prints them
  std::string geometry;                       // WKT
};

struct OgrLayer {
  std::string name;
  long long count = -1;             // "Feature Count"
  std::vector<std::string> fields;  // in order
  std::string crs;                  // the "Layer SRS WKT" text; empty for none
  std::vector<OgrFeature> features;
};

inline std::string ogrinfo_program() {
  const char* set = std::getenv("MGPR_TEST_OGRINFO");
  return set != nullptr ? set : "ogrinfo";
}

// `ogrinfo -ro -al <file>`'s layers; throws when ogrinfo fails or cannot open the file.
inline std::vector<OgrLayer> ogrinfo_layers(const std::filesystem::path& file) {
  const auto command = ogrinfo_program() + " -ro -al '" + file.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
  std::string text;
  char buffer[4096];
  for (std::size_t got = 0; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, got);
  if (::pclose(pipe) != 0 || text.find("FAILURE") != std::string::npos) {
    throw std::runtime_error(command + " failed:\n" + text);
  }
  static const std::regex field_definition(R"(^([A-Za-z_][A-Za-z0-9_]*): [A-Za-z0-9]+ \()");
  static const std::regex field_value(R"(^  ([A-Za-z_][A-Za-z0-9_]*) \([A-Za-z0-9]+\) = ?(.*)$)");
  std::vector<OgrLayer> layers;
  bool in_crs = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (line.rfind("Layer name: ", 0) == 0) {
      layers.emplace_back().name = line.substr(12);
      in_crs = false;
    } else if (layers.empty()) {
      continue;
    } else if (line.rfind("Layer SRS WKT:", 0) == 0) {
      in_crs = true;
    } else if (in_crs && line.rfind("Data axis", 0) != 0 && line.rfind("FID Column", 0) != 0 &&
               line.rfind("Geometry Column", 0) != 0 && !std::regex_search(line, match, field_definition)) {
      if (line != "(unknown)") layers.back().crs += line + "\n";
    } else if (line.rfind("Feature Count: ", 0) == 0) {
      layers.back().count = std::stoll(line.substr(15));
    } else if (line.rfind("OGRFeature(", 0) == 0) {
      in_crs = false;
      layers.back().features.emplace_back();
    } else if (layers.back().features.empty() && std::regex_search(line, match, field_definition) &&
               match[1] != "Geometry") {
      in_crs = false;
      layers.back().fields.push_back(match[1]);
    } else if (!layers.back().features.empty() && std::regex_match(line, match, field_value)) {
      layers.back().features.back().values[match[1]] = match[2];
    } else if (!layers.back().features.empty() && line.rfind("  POLYGON", 0) == 0) {
      layers.back().features.back().geometry = line.substr(2);
    }
  }
  return layers;
}

inline OgrLayer ogrinfo_layer(const std::filesystem::path& file) {
  auto layers = ogrinfo_layers(file);
  if (layers.size() != 1) throw std::runtime_error(file.string() + " has not one layer");
  return layers.front();
}

// A polygon's vertices, each ring's closing point dropped, sorted: the same for a ring
// kept in either direction or from another first point.
inline std::vector<std::pair<double, double>> vertices_of(const std::string& wkt) {
  std::vector<std::pair<double, double>> points;
  static const std::regex pair(R"((-?[0-9.eE+-]+) (-?[0-9.eE+-]+))");
  std::string rest = wkt;
  for (std::size_t open = rest.find('('); open != std::string::npos;) {
    const auto ring_start = rest.find_first_not_of('(', open);
    const auto ring_end = rest.find(')', ring_start);
    if (ring_end == std::string::npos) break;
    const auto ring = rest.substr(ring_start, ring_end - ring_start);
    std::vector<std::pair<double, double>> ring_points;
    for (std::sregex_iterator at(ring.begin(), ring.end(), pair), end; at != end; ++at) {
      ring_points.emplace_back(std::stod((*at)[1]), std::stod((*at)[2]));
    }
    if (ring_points.size() > 1) ring_points.pop_back();
    points.insert(points.end(), ring_points.begin(), ring_points.end());
    open = rest.find('(', ring_end);
  }
  std::sort(points.begin(), points.end());
  return points;
}

// Printed values alike: the same text, or numbers equal to 12 significant digits (a
// text format keeps 15, which ogrinfo may print otherwise than a binary one).
inline bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  if (a.empty() || b.empty() || *end_a != '\0' || *end_b != '\0') return false;
  return std::fabs(x - y) <= 1e-12 * std::max(1.0, std::fabs(x));
}

// What a format changes of what it was given, and a comparison allows.
struct FormatQuirks {
  std::map<std::string, std::string> renamed;  // field names it shortens
  bool empty_reads_null = false;               // Shapefile: dBASE has no empty text
  bool any_order = false;                      // FlatGeobuf: features in its spatial index's order
};

inline FormatQuirks quirks_of(const std::string& extension) {
  FormatQuirks quirks;
  if (extension == "shp") {
    quirks.renamed["tile_column"] = "tile_col";
    quirks.empty_reads_null = true;
  }
  quirks.any_order = extension == "fgb";
  return quirks;
}

// Why `got` is not `want` (field values and polygon vertices); empty when it is.
inline std::string difference(const OgrFeature& want, const OgrFeature& got, const FormatQuirks& quirks) {
  for (const auto& [field, value] : want.values) {
    const auto name = quirks.renamed.contains(field) ? quirks.renamed.at(field) : field;
    const auto found = got.values.find(name);
    if (found == got.values.end()) return "no field " + name;
    const bool null_for_empty = quirks.empty_reads_null && value.empty() && found->second == "(null)";
    if (!null_for_empty && !same_value(value, found->second)) return name + ": " + found->second + " != " + value;
  }
  const auto want_points = vertices_of(want.geometry);
  const auto got_points = vertices_of(got.geometry);
  if (got_points.size() != want_points.size()) return "geometry " + got.geometry + " != " + want.geometry;
  for (std::size_t p = 0; p < want_points.size(); ++p) {
    if (std::fabs(got_points[p].first - want_points[p].first) > 1e-6 ||
        std::fabs(got_points[p].second - want_points[p].second) > 1e-6) {
      return "geometry " + got.geometry + " != " + want.geometry;
    }
  }
  return {};
}

// `other` holds `reference`'s features (in its order, unless the format keeps another):
// every field of `reference`, named as the format names it, with the same values, and
// polygons with the same vertices.
inline void expect_same_features(const OgrLayer& reference, const OgrLayer& other, const FormatQuirks& quirks = {}) {
  EXPECT_EQ(other.count, reference.count) << other.name;
  ASSERT_EQ(other.features.size(), reference.features.size()) << other.name;
  for (const auto& field : reference.fields) {
    const auto name = quirks.renamed.contains(field) ? quirks.renamed.at(field) : field;
    EXPECT_NE(std::find(other.fields.begin(), other.fields.end(), name), other.fields.end())
        << other.name << " has no field " << name;
  }
  std::vector<bool> used(other.features.size(), false);
  for (std::size_t i = 0; i < reference.features.size(); ++i) {
    if (!quirks.any_order) {
      const auto why = difference(reference.features[i], other.features[i], quirks);
      EXPECT_EQ(why, "") << other.name << " feature " << i;
      continue;
    }
    bool found = false;
    for (std::size_t j = 0; j < other.features.size() && !found; ++j) {
      found = !used[j] && difference(reference.features[i], other.features[j], quirks).empty();
      if (found) used[j] = true;
    }
    EXPECT_TRUE(found) << other.name << " has no feature like feature " << i << " of " << reference.name;
  }
}

}  // namespace mgpr::test
