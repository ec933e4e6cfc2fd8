#pragma once
// What the tests of resumed runs share: how many tiles the journals hold, the ranks a
// local launcher started, a polled wait, a vector layer as text, the tiles a run did.
#include <gdal_priv.h>
#include <ogrsf_frmts.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"

namespace mgpr::test::resume {

namespace fs = std::filesystem;

// Complete journal lines of every rank, summed.
inline int journaled_tiles(const fs::path& output) {
  int lines = 0;
  std::error_code error;
  for (const auto& entry : fs::recursive_directory_iterator(output / ".mgpr-journal", error)) {
    if (entry.path().extension() != ".tiles") continue;
    const auto text = mgpr::test::read_text(entry.path());
    lines += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  return lines;
}

// The ranks `mgpr gpus=N` started: the launcher's children.
inline std::vector<pid_t> ranks_of(pid_t launcher) {
  std::vector<pid_t> ranks;
  std::ifstream children("/proc/" + std::to_string(launcher) + "/task/" + std::to_string(launcher) + "/children");
  for (pid_t pid = 0; children >> pid;) ranks.push_back(pid);
  return ranks;
}

inline bool wait_for(const std::function<bool()>& condition, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Every feature of the layer as text: fields and geometry, in file order.
inline std::string layer_content(const fs::path& file) {
  GDALAllRegister();
  GDALDatasetUniquePtr dataset(GDALDataset::Open(file.c_str(), GDAL_OF_VECTOR));
  if (!dataset) return "cannot open " + file.string();
  std::string text;
  for (auto& feature : *dataset->GetLayer(0)) {
    for (int i = 0; i < feature->GetFieldCount(); ++i) text += std::string(feature->GetFieldAsString(i)) + " ";
    char* wkt = nullptr;
    feature->GetGeometryRef()->exportToWkt(&wkt);
    text += std::string(wkt) + "\n";
    CPLFree(wkt);
  }
  return text;
}

inline int tiles_processed(const std::string& stdout_text) {
  std::smatch match;
  const std::regex total("total: ([0-9]+) tiles on");
  return std::regex_search(stdout_text, match, total) ? std::stoi(match[1]) : -1;
}

}  // namespace mgpr::test::resume
