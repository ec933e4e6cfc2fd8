#include "mgpr/log_layout.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "mgpr/error.hpp"
#include "mgpr/text.hpp"

namespace mgpr {
namespace fs = std::filesystem;

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "1234_7" sorts as (1234, 7) so job 99 comes before 100.
std::pair<unsigned long long, unsigned long long> job_order(const std::string& id) {
  const auto underscore = id.find('_');
  // Past 20 digits a number does not fit: such a name sorts last instead of throwing.
  constexpr auto kLast = std::numeric_limits<unsigned long long>::max();
  const auto base = parse_number<unsigned long long>(std::string_view(id).substr(0, underscore)).value_or(kLast);
  const auto task =
      underscore == std::string::npos
          ? 0ULL
          : parse_number<unsigned long long>(std::string_view(id).substr(underscore + 1)).value_or(kLast - 1) + 1;
  return {base, task};
}

constexpr std::string_view kRankPrefix = "rank-";

std::string rank_name(int rank) { return fmt::format("{}{:05}", kRankPrefix, rank); }

}  // namespace

fs::path JobLogLayout::rank_summary(int rank) const { return job_dir() / (rank_name(rank) + ".json"); }

fs::path job_log_dir(const std::string& plugin_log_dir, const std::optional<std::string>& task_log_dir,
                     const std::optional<std::string>& submit_dir, const std::string& job_id) {
  const fs::path base = submit_dir.value_or(".");
  if (!plugin_log_dir.empty()) return JobLogLayout{base / plugin_log_dir, job_id}.job_dir();
  if (task_log_dir && !task_log_dir->empty()) return *task_log_dir;
  return JobLogLayout{base / kDefaultLogRoot, job_id}.job_dir();
}

fs::path progress_dir(const fs::path& job_log_folder, std::uint32_t step_id) {
  return job_log_folder / "progress" / std::to_string(step_id);
}

fs::path progress_file(const fs::path& dir, int rank) { return dir / rank_name(rank); }

std::optional<int> rank_of_progress_file(const std::string& name) {
  if (!name.starts_with(kRankPrefix)) return std::nullopt;
  return parse_number<int>(std::string_view(name).substr(kRankPrefix.size()), 0, std::numeric_limits<int>::max());
}

bool is_job_id(std::string_view name) {
  const auto underscore = name.find('_');
  if (underscore == std::string_view::npos) return all_digits(name);
  return all_digits(name.substr(0, underscore)) && all_digits(name.substr(underscore + 1));
}

std::vector<std::string> list_job_ids(const fs::path& log_root) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(log_root, ec)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (entry.path().extension() == ".out" || entry.path().extension() == ".err")) {
      name = entry.path().stem().string();
    } else if (!entry.is_directory()) {
      continue;
    }
    if (is_job_id(name) && std::find(ids.begin(), ids.end(), name) == ids.end()) ids.push_back(name);
  }
  std::sort(ids.begin(), ids.end(), [](const auto& a, const auto& b) { return job_order(a) < job_order(b); });
  return ids;
}

std::vector<fs::path> list_rank_summaries(const JobLogLayout& layout) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(layout.job_dir(), ec)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("rank-") && name.ends_with(".json")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // zero-padded, so name order is rank order
  return files;
}

void write_file_atomically(const fs::path& target, std::string_view content) {
  const fs::path temporary = target.string() + fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw IoError(
          fmt::format("cannot write '{}': {}; check that its folder exists and is writable", target.string(), why));
    }
  }
  std::error_code ec;
  fs::rename(temporary, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw IoError(fmt::format("cannot write '{}': {}", target.string(), ec.message()));
  }
}

std::string read_text_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read '{}': {}", file.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace mgpr
