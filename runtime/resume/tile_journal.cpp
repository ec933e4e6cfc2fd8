#include "resume/tile_journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mgpr/error.hpp"
#include "mgpr/log_layout.hpp"

namespace mgpr::runtime {
namespace {

constexpr std::string_view kJournalFolder = ".mgpr-journal";
// In a run's journal folder: line i is raster i's identity.
constexpr std::string_view kRasterIdentities = "rasters.identity";

// A file's identity for the fingerprint: a rewritten raster or model is another input.
std::string file_identity(const std::string& path) {
  std::error_code error;
  const auto absolute = std::filesystem::absolute(path, error);
  const auto size = std::filesystem::file_size(path, error);
  if (error) return path;
  const auto written = std::filesystem::last_write_time(path, error);
  return fmt::format("{} {} {}", absolute.string(), size, written.time_since_epoch().count());
}

}  // namespace

std::filesystem::path journal_dir(const JournalKey& key) {
  return key.output_dir / kJournalFolder / fmt::format("{:016x}", fnv1a(record_text(key.settings, key.rasters)));
}

std::filesystem::path legacy_journal_dir(const LegacyJournalKey& key) {
  std::string text = fmt::format("{}\nmodel={}\n", key.settings, file_identity(key.model));
  for (const auto& library : key.libraries) text += "library=" + file_identity(library) + "\n";
  for (const auto& raster : key.rasters) text += "raster=" + raster + "\n";
  return key.output_dir / kJournalFolder / fmt::format("{:016x}", fnv1a(text));
}

TileJournal::TileJournal(const std::filesystem::path& dir, int rank) : file_(dir / fmt::format("rank-{}.tiles", rank)) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error(
        fmt::format("cannot open the resume journal '{}': {}; check that output_dir is "
                    "writable",
                    file_.string(), std::strerror(errno)));
  }
}

TileJournal::~TileJournal() {
  if (fd_ < 0) return;
  try {
    flush();
  } catch (const std::exception&) {
    // Losing the last entries only means those tiles are processed again.
  }
  ::fdatasync(fd_);
  ::close(fd_);
}

void TileJournal::append(const TileId& id, std::string_view payload) { pending_ += format_result_line(id, payload); }

void TileJournal::flush() {
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const auto written = ::write(fd_, rest.data(), rest.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC || errno == EDQUOT) {
        throw IoError(fmt::format(
            "writing the resume journal '{}' failed: the disk holding it is full ({}); free some space or choose "
            "another output_dir, then run the same command again: the tiles already journaled are not computed again",
            file_.string(), std::strerror(errno)));
      }
      throw std::runtime_error(
          fmt::format("writing the resume journal '{}' failed: {}", file_.string(), std::strerror(errno)));
    }
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
  pending_.clear();
  // write() alone survives a killed process; the sync guards against a lost node. At
  // most once a second, as a sync per batch is slow on shared filesystems (Lustre, NFS).
  const auto now = std::chrono::steady_clock::now();
  if (now - last_sync_ >= std::chrono::seconds(1)) {
    ::fdatasync(fd_);
    last_sync_ = now;
  }
}

std::string format_result_line(const TileId& id, std::string_view payload) {
  return fmt::format("{} {} {}\t{}\n", id.image, id.row, id.column, payload);
}

void parse_result_lines(std::string_view text, TileResults& into) {
  std::size_t begin = 0;
  // A last line without its newline was cut by a kill: ignored.
  for (auto end = text.find('\n'); end != std::string_view::npos; begin = end + 1, end = text.find('\n', begin)) {
    const auto line = text.substr(begin, end - begin);
    const auto tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    std::istringstream head{std::string(line.substr(0, tab))};
    TileId id;
    // The first result of a tile wins; a later duplicate (never written by mgpr) is ignored.
    if (head >> id.image >> id.row >> id.column) into.emplace(id, std::string(line.substr(tab + 1)));
  }
}

std::string remove_journals(const std::filesystem::path& dir) {
  DIR* const folder = ::opendir(dir.c_str());
  if (folder == nullptr) {
    return errno == ENOENT ? std::string() : fmt::format("{}: {}", dir.string(), std::strerror(errno));
  }
  std::string failures;
  const int folder_fd = ::dirfd(folder);
  while (const dirent* entry = ::readdir(folder)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    // unlinkat removes a symbolic link itself, never what it points to.
    if (::unlinkat(folder_fd, entry->d_name, 0) != 0) {
      failures += fmt::format("{}/{}: {}; ", dir.string(), name, std::strerror(errno));
    }
  }
  ::closedir(folder);
  if (::rmdir(dir.c_str()) != 0) failures += fmt::format("{}: {}", dir.string(), std::strerror(errno));
  // Other runs' journals may still be in the parent: then it stays.
  if (failures.empty()) ::rmdir(dir.parent_path().c_str());
  return failures;
}

void record_raster_identities(const std::filesystem::path& dir, std::span<const std::string> rasters) {
  std::string text;
  for (const auto& raster : rasters) text += file_identity(raster) + "\n";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  write_file_atomically(dir / kRasterIdentities, text);
}

std::vector<int> drop_results_of_changed_rasters(TileResults& results, const std::filesystem::path& dir,
                                                 std::span<const std::string> rasters) {
  std::ifstream in(dir / kRasterIdentities);
  std::vector<int> changed;
  std::string recorded;
  for (std::size_t image = 0; image < rasters.size() && std::getline(in, recorded); ++image) {
    if (recorded != file_identity(rasters[image])) changed.push_back(static_cast<int>(image));
  }
  const std::set<int> dropped(changed.begin(), changed.end());
  std::erase_if(results, [&](const auto& entry) { return dropped.contains(entry.first.image); });
  return changed;
}

std::string forget_rasters(const std::filesystem::path& dir, std::span<const int> images) {
  if (images.empty()) return {};
  const std::set<int> forgotten(images.begin(), images.end());
  std::error_code error;
  std::string failures;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() != ".tiles") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string kept;
    std::string line;
    // A line cut by a kill has no newline: getline hands it over and it goes too.
    while (std::getline(in, line) && !in.eof()) {
      int image = -1;
      std::istringstream(line) >> image;
      if (!forgotten.contains(image)) kept += line + "\n";
    }
    try {
      write_file_atomically(entry.path(), kept);
    } catch (const std::exception& failure) {
      failures += fmt::format("{}; ", failure.what());
    }
  }
  return failures;
}

TileResults read_journals(const std::filesystem::path& dir) {
  TileResults results;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return results;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() != ".tiles") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    parse_result_lines(content, results);
  }
  return results;
}

std::size_t keep_results_of(TileResults& results, std::span<const Tile> tiles) {
  std::set<TileId> known;
  for (const auto& tile : tiles) known.insert(tile.id);
  return std::erase_if(results, [&](const auto& entry) { return !known.contains(entry.first); });
}

}  // namespace mgpr::runtime
