#pragma once
// A text table written while a run goes on: appended to a temporary file beside the
// target and renamed over it when complete, so that neither a reader nor an interrupted
// run sees half a table under its name, and no rank holds the run's rows in memory.
#include <filesystem>
#include <fstream>
#include <string_view>

namespace mgpr::runtime {

class TableFile {
 public:
  explicit TableFile(std::filesystem::path target);
  // Uncommitted (a stopped run, an error): the temporary file is removed.
  ~TableFile();
  TableFile(const TableFile&) = delete;
  TableFile& operator=(const TableFile&) = delete;

  // Throws IoError naming the target when the disk refuses.
  void append(std::string_view text);
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temporary_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace mgpr::runtime
