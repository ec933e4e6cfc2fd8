#pragma once
// The known-answer scene shared by the runtime and real-cluster tests: a 200 x 150 px
// image tiled by 64 with overlap 16 (columns start at 0, 48, 96, 136; rows at 0, 48,
// 86), and bright squares of at most 14 px, smaller than the overlap, so each lies whole
// in some tile while its neighbours see it cut. Plus a reader for the CSVs mgpr writes.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace mgpr::test {

inline const std::vector<std::string> kKnownSquares{
    "10,10,8",     // inside one tile
    "44,20,10",    // across the column overlap at x 48..64
    "58,58,12",    // across a row and a column overlap
    "195,30,10",   // past the right edge: clipped to 195..200
    "100,145,10",  // past the bottom edge, and whole in two column windows
    "0,100,6",     // on the left edge, whole in two row windows
    "130,90,14",   // whole in two tiles of each axis
};

// Rows of a CSV with a header, as column name -> text (no quoted fields needed here).
inline std::vector<std::map<std::string, std::string>> read_csv_rows(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::vector<std::string> header;
  std::getline(in, line);
  for (std::istringstream fields(line); std::getline(fields, line, ',');) header.push_back(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    auto& row = rows.emplace_back();
    for (const auto& name : header) std::getline(fields, row[name], ',');
  }
  return rows;
}

}  // namespace mgpr::test
