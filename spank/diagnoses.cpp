#include "diagnoses.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mgpr/log_layout.hpp"

namespace mgpr::spank {

std::string diagnosis_line(std::time_t when, std::string_view message) {
  std::tm utc{};
  gmtime_r(&when, &utc);
  char stamp[32];
  const auto length = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::string line = fmt::format("{} mgpr: {}", std::string_view(stamp, length), message);
  std::replace(line.begin(), line.end(), '\n', ' ');
  line += '\n';
  return line;
}

void append_diagnosis(const JobUser& user, const std::filesystem::path& log_dir, std::string_view message) {
  // The folder's name is the job's; the layout names the file in it.
  const auto file = JobLogLayout{log_dir.parent_path(), log_dir.filename().string()}.diagnoses();
  append_file_as(user, log_dir, file.filename().string(), diagnosis_line(std::time(nullptr), message));
}

}  // namespace mgpr::spank
