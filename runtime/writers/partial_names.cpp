#include "writers/partial_names.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "mgpr/process.hpp"
#include "mgpr/text.hpp"

namespace mgpr::runtime::output {
namespace {

std::string this_host() { return host_name("host"); }

// The process number in `name` when it is a temporary name of this host's, else 0.
pid_t writer_of(std::string_view name, const std::string& marker) {
  if (name.empty() || name.front() != '.') return 0;
  const auto at = name.rfind(marker);
  if (at == std::string_view::npos) return 0;
  auto digits = name.substr(at + marker.size());
  digits = digits.substr(0, digits.find('.'));  // the extension after the number
  const auto pid = parse_number<pid_t>(std::string(digits), 1, std::numeric_limits<pid_t>::max());
  return pid.value_or(0);
}

bool runs(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

}  // namespace

std::filesystem::path partial_path(const std::filesystem::path& target) {
  return target.parent_path() / fmt::format(".{}.partial-{}-{}{}", target.filename().string(), this_host(), ::getpid(),
                                            target.extension().string());
}

std::vector<std::filesystem::path> remove_stale_partials(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> removed;
  const auto marker = fmt::format(".partial-{}-", this_host());
  std::error_code error;
  for (std::filesystem::directory_iterator entry(folder, error), end; !error && entry != end; entry.increment(error)) {
    std::error_code status_error;
    const auto status = entry->symlink_status(status_error);
    // A dataset written as a folder (GeoParquet's) is one too; a link is neither.
    const bool is_folder = std::filesystem::is_directory(status);
    if ((!std::filesystem::is_regular_file(status) && !is_folder) || status_error) continue;
    const auto pid = writer_of(entry->path().filename().string(), marker);
    if (pid == 0 || runs(pid)) continue;
    std::error_code remove_error;
    const bool gone = is_folder ? std::filesystem::remove_all(entry->path(), remove_error) > 0
                                : std::filesystem::remove(entry->path(), remove_error);
    if (gone && !remove_error) removed.push_back(entry->path());
  }
  return removed;
}

}  // namespace mgpr::runtime::output
