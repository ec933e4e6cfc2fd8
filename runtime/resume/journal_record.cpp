#include "resume/journal_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>

namespace mgpr::runtime {
namespace {

constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

std::uint64_t fnv1a_continue(std::uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

// A value on one line of the record, whatever the user typed.
std::string one_line(std::string value) {
  std::replace(value.begin(), value.end(), '\n', ' ');
  return value;
}

std::string shown(const std::string& value) { return value.empty() ? "\"\"" : value; }

std::string read_whole(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Complete lines of a rank journal, read in blocks: a stale journal can be large.
std::size_t count_lines(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::array<char, 1 << 16> block{};
  std::size_t lines = 0;
  while (in.read(block.data(), block.size()) || in.gcount() > 0) {
    lines += static_cast<std::size_t>(std::count(block.data(), block.data() + in.gcount(), '\n'));
  }
  return lines;
}

}  // namespace

std::uint64_t fnv1a(std::string_view text) { return fnv1a_continue(kFnvOffset, text); }

std::string record_text(const std::vector<RecordedSetting>& settings, const std::vector<std::string>& rasters) {
  std::string text;
  for (const auto& [name, value] : settings) text += fmt::format("{}={}\n", name, one_line(value));
  for (const auto& raster : rasters) text += fmt::format("raster={}\n", one_line(raster));
  return text;
}

ParsedRecord parse_record(std::string_view text) {
  ParsedRecord record;
  while (!text.empty()) {
    const auto end = std::min(text.find('\n'), text.size());
    const auto line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const auto equals = line.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    std::string name(line.substr(0, equals));
    std::string value(line.substr(equals + 1));
    if (name == "raster") {
      record.rasters.push_back(std::move(value));
    } else {
      record.settings.emplace_back(std::move(name), std::move(value));
    }
  }
  return record;
}

std::optional<std::string> file_content_identity(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(file, error)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> block(1 << 20);
  std::uint64_t hash = kFnvOffset;
  std::uint64_t size = 0;
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    const auto count = static_cast<std::size_t>(in.gcount());
    hash = fnv1a_continue(hash, std::string_view(block.data(), count));
    size += count;
  }
  if (in.bad()) return std::nullopt;
  return fmt::format("{} bytes, fnv1a {:016x}", size, hash);
}

std::string describe_changes(const ParsedRecord& earlier, const ParsedRecord& now, std::size_t shown_at_most) {
  const auto find = [](const std::vector<RecordedSetting>& settings, const std::string& name) {
    return std::find_if(settings.begin(), settings.end(), [&](const auto& setting) { return setting.first == name; });
  };
  std::vector<std::string> changes;
  for (const auto& [name, value] : now.settings) {
    const auto before = find(earlier.settings, name);
    if (before == earlier.settings.end()) {
      changes.push_back(fmt::format("{} not recorded → {}", name, shown(value)));
    } else if (before->second != value) {
      changes.push_back(fmt::format("{} {} → {}", name, shown(before->second), shown(value)));
    }
  }
  for (const auto& [name, value] : earlier.settings) {
    if (find(now.settings, name) == now.settings.end()) changes.push_back(fmt::format("{} {} → none", name, value));
  }
  if (earlier.rasters.size() != now.rasters.size()) {
    changes.push_back(fmt::format("inputs {} rasters → {}", earlier.rasters.size(), now.rasters.size()));
  } else if (earlier.rasters != now.rasters) {
    std::size_t other = 0;
    for (std::size_t i = 0; i < now.rasters.size(); ++i) other += earlier.rasters[i] != now.rasters[i] ? 1 : 0;
    changes.push_back(fmt::format("inputs: {} of the {} rasters other", other, now.rasters.size()));
  }
  if (changes.empty()) return "nothing that changes a result";
  std::string text;
  for (std::size_t i = 0; i < changes.size() && i < shown_at_most; ++i) {
    text += (i > 0 ? ", " : "") + changes[i];
  }
  if (changes.size() > shown_at_most) text += fmt::format(" and {} more", changes.size() - shown_at_most);
  return text;
}

std::vector<EarlierJournal> earlier_journals(const std::filesystem::path& own) {
  std::vector<EarlierJournal> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(own.parent_path(), error)) {
    if (!entry.is_directory(error) || entry.path().filename() == own.filename()) continue;
    // file_clock's epoch is in the future (libstdc++): real times are below its zero.
    EarlierJournal journal{entry.path(), std::nullopt, 0, std::filesystem::file_time_type::min()};
    for (const auto& file : std::filesystem::directory_iterator(entry.path(), error)) {
      journal.written = std::max(journal.written, file.last_write_time(error));
      if (file.path().filename() == kSettingsRecord) journal.record = parse_record(read_whole(file.path()));
      if (file.path().extension() == ".tiles") journal.tiles += count_lines(file.path());
    }
    found.push_back(std::move(journal));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.written > b.written; });
  return found;
}

}  // namespace mgpr::runtime
