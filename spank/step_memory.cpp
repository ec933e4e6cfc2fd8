#include "step_memory.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace mgpr::spank {
namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> lines(std::string_view text) {
  auto all = split(text, '\n');
  if (!all.empty() && all.back().empty()) all.pop_back();
  return all;
}

// mountinfo writes a space, tab, newline or backslash in a path as \ooo (octal).
std::string unescape_octal(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      const auto [end, error] = std::from_chars(field.data() + i + 1, field.data() + i + 4, value, 8);
      if (error == std::errc{} && end == field.data() + i + 4) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

bool has_option(std::string_view options, std::string_view wanted) {
  for (const auto option : split(options, ',')) {
    if (option == wanted) return true;
  }
  return false;
}

// `path` lies under `root` (both absolute, from the hierarchy's root).
std::optional<std::string> below(std::string_view path, std::string_view root) {
  if (root == "/") return std::string(path);
  if (!path.starts_with(root)) return std::nullopt;
  const auto rest = path.substr(root.size());
  if (!rest.empty() && rest.front() != '/') return std::nullopt;
  return std::string(rest.empty() ? "/" : rest);
}

std::string read_small_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string{};
}

}  // namespace

std::optional<CgroupPlace> memory_cgroup(std::string_view proc_self_cgroup) {
  std::optional<CgroupPlace> unified;
  for (const auto line : lines(proc_self_cgroup)) {
    // "hierarchy-id:controllers:path"; the path may itself hold ':'.
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const auto controllers = line.substr(first + 1, second - first - 1);
    const auto path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') continue;
    if (has_option(controllers, "memory")) return CgroupPlace{false, std::string(path)};
    if (line.substr(0, first) == "0" && controllers.empty()) unified = CgroupPlace{true, std::string(path)};
  }
  return unified;
}

std::optional<std::filesystem::path> cgroup_folder(std::string_view mountinfo, const CgroupPlace& place) {
  std::optional<std::filesystem::path> best;
  std::size_t best_root = 0;
  for (const auto line : lines(mountinfo)) {
    const auto fields = split(line, ' ');
    std::size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash + 3 >= fields.size()) continue;
    const auto type = fields[dash + 1];
    const bool fits = place.unified ? type == "cgroup2" : type == "cgroup" && has_option(fields[dash + 3], "memory");
    if (!fits) continue;
    const auto root = unescape_octal(fields[3]);
    const auto rest = below(place.path, root);
    if (!rest || (best && root.size() <= best_root)) continue;
    best = std::filesystem::path(unescape_octal(fields[4])) / std::filesystem::path(*rest).relative_path();
    best_root = root.size();
  }
  return best;
}

std::optional<std::filesystem::path> step_folder(const std::filesystem::path& folder, std::uint32_t step_id) {
  const std::string name = "step_" + std::to_string(step_id);
  for (auto at = folder; !at.empty() && at != at.root_path(); at = at.parent_path()) {
    if (at.filename() == name) return at;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> oom_kill_count(std::string_view events_text) {
  for (const auto line : lines(events_text)) {
    const auto fields = split(line, ' ');
    if (fields.size() != 2 || fields[0] != "oom_kill") continue;
    std::uint64_t count = 0;
    const auto [end, error] = std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), count);
    if (error == std::errc{} && end == fields[1].data() + fields[1].size()) return count;
  }
  return std::nullopt;
}

std::optional<StepMemory> StepMemory::of_this_step(std::uint32_t step_id) {
  const auto place = memory_cgroup(read_small_file("/proc/self/cgroup"));
  if (!place) return std::nullopt;
  const auto folder = cgroup_folder(read_small_file("/proc/self/mountinfo"), *place);
  if (!folder) return std::nullopt;
  const auto step = step_folder(*folder, step_id);
  if (!step) return std::nullopt;
  StepMemory memory(*step / (place->unified ? "memory.events" : "memory.oom_control"));
  if (!memory.oom_kills()) return std::nullopt;
  return memory;
}

std::optional<std::uint64_t> StepMemory::oom_kills() const {
  auto total = oom_kill_count(read_small_file(events_file_));
  if (!total) return std::nullopt;
  // Under cgroup v1 the kernel counts a kill in the victim's own cgroup only, and Slurm
  // puts each task in a cgroup of its own below the step's (task_<id>): add theirs. (Under
  // v2 the step's count already holds them; adding counts twice, which changes no
  // comparison with the count before the tasks ran.)
  std::error_code error;
  const auto step = events_file_.parent_path();
  for (std::filesystem::recursive_directory_iterator at(step, error), end; !error && at != end; at.increment(error)) {
    if (at.depth() > 2) {
      at.disable_recursion_pending();
      continue;
    }
    if (!at->is_directory(error) || at->is_symlink(error)) continue;
    if (const auto count = oom_kill_count(read_small_file(at->path() / events_file_.filename()))) *total += *count;
  }
  return total;
}

}  // namespace mgpr::spank
