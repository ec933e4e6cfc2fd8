#include "writers/table_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "mgpr/error.hpp"
#include "writers/partial_names.hpp"

namespace mgpr::runtime {
namespace {

[[noreturn]] void refused(const std::filesystem::path& target, const std::string& why) {
  throw IoError(
      fmt::format("cannot write '{}': {}; check that its folder exists and is writable", target.string(), why));
}

}  // namespace

TableFile::TableFile(std::filesystem::path target)
    : target_(std::move(target)),
      temporary_(output::partial_path(target_)),
      out_(temporary_, std::ios::binary | std::ios::trunc) {
  if (!out_) refused(target_, std::strerror(errno));
}

TableFile::~TableFile() {
  if (committed_) return;
  out_.close();
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void TableFile::append(std::string_view text) {
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out_) refused(target_, std::strerror(errno));
}

void TableFile::commit() {
  out_.flush();
  out_.close();
  if (!out_) refused(target_, std::strerror(errno));
  std::error_code error;
  std::filesystem::rename(temporary_, target_, error);
  if (error) refused(target_, error.message());
  committed_ = true;
}

}  // namespace mgpr::runtime
