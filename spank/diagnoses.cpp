#include "diagnoses.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "mgpr/log_layout.hpp"

namespace mgpr::spank {
namespace {

// Closes the descriptor however the write ends.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

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

void append_diagnosis(const std::filesystem::path& log_dir, std::string_view message) {
  // The folder's name is the job's; the layout names the file in it.
  const auto file = JobLogLayout{log_dir.parent_path(), log_dir.filename().string()}.diagnoses();
  std::filesystem::create_directories(log_dir);
  const FileDescriptor fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + file.string());
  const std::string line = diagnosis_line(std::time(nullptr), message);
  const auto written = ::write(fd.get(), line.data(), line.size());
  if (written != static_cast<ssize_t>(line.size())) {
    throw std::system_error(errno, std::generic_category(), "cannot write " + file.string());
  }
}

}  // namespace mgpr::spank
