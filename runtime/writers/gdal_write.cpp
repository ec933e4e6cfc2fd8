#include "writers/gdal_write.hpp"

#include <cpl_error.h>
#include <fmt/format.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "mgpr/error.hpp"
#include "writers/partial_names.hpp"

namespace mgpr::runtime::output {

GDALDriver& driver(const char* name, const std::filesystem::path& file) {
  static std::once_flag registered;
  std::call_once(registered, [] { GDALAllRegister(); });
  auto* found = GetGDALDriverManager()->GetDriverByName(name);
  if (found == nullptr) {
    throw std::runtime_error(fmt::format("cannot write '{}': this GDAL has no {} driver; install a GDAL built with it",
                                         file.string(), name));
  }
  return *found;
}

namespace {

// Below this much free space a failed write is taken for a full disk.
constexpr std::uintmax_t kNearlyFull = 1 << 20;
// GDAL's reasons can quote a driver's whole SQL (SQLite's "database or disk is full"
// comes after kilobytes of CREATE TABLE): the start says enough.
constexpr std::size_t kReasonLimit = 300;

bool disk_is_full(const std::filesystem::path& folder, std::string_view reason) {
  std::error_code error;
  const auto space = std::filesystem::space(folder.empty() ? "." : folder, error);
  return (!error && space.available < kNearlyFull) || reason.find("disk is full") != std::string_view::npos ||
         reason.find("No space left") != std::string_view::npos;
}

}  // namespace

void fail(const std::filesystem::path& file, std::string_view what) {
  auto reason = gdal_last_error("GDAL gave no reason");
  if (disk_is_full(file.parent_path(), reason)) {
    throw IoError(fmt::format(
        "cannot write '{}': the disk holding '{}' is full; free some space or choose another output_dir, then run "
        "the same command again: the tiles already finished are kept in the journal and are not computed again",
        file.string(), file.parent_path().string()));
  }
  if (reason.size() > kReasonLimit) reason = reason.substr(0, kReasonLimit) + " [...]";
  throw std::runtime_error(fmt::format("cannot write '{}': {}: {}", file.string(), what, reason));
}

void close(GDALDatasetUniquePtr& dataset, const std::filesystem::path& file) {
  CPLErrorReset();
  dataset.reset();
  if (CPLGetLastErrorType() >= CE_Failure) fail(file, "closing it failed");
}

namespace {

std::filesystem::path with_extension(std::filesystem::path file, std::string_view extension) {
  return file.replace_extension(extension);
}

}  // namespace

PartialFile::PartialFile(std::filesystem::path target, std::span<const std::string_view> sidecars)
    : target_(std::move(target)), sidecars_(sidecars) {
  partial_ = partial_path(target_);
  // A process with our number may have left one; drivers differ on whether they overwrite.
  std::error_code ignored;
  std::filesystem::remove(partial_, ignored);
  for (const auto extension : sidecars_) std::filesystem::remove(with_extension(partial_, extension), ignored);
}

PartialFile::~PartialFile() {
  if (committed_) return;
  std::error_code ignored;
  std::filesystem::remove(partial_, ignored);
  for (const auto extension : sidecars_) std::filesystem::remove(with_extension(partial_, extension), ignored);
}

void PartialFile::commit() {
  std::error_code error;
  for (const auto extension : sidecars_) {
    const auto sidecar = with_extension(partial_, extension);
    const auto target = with_extension(target_, extension);
    if (std::filesystem::exists(sidecar)) {
      std::filesystem::rename(sidecar, target, error);
    } else {
      std::filesystem::remove(target, error);
    }
    if (error) {
      throw std::runtime_error(fmt::format("cannot write '{}': renaming '{}' failed: {}", target_.string(),
                                           sidecar.string(), error.message()));
    }
  }
  std::filesystem::rename(partial_, target_, error);
  if (error) {
    throw std::runtime_error(fmt::format("cannot write '{}': renaming the complete '{}' over it failed: {}",
                                         target_.string(), partial_.string(), error.message()));
  }
  committed_ = true;
}

}  // namespace mgpr::runtime::output
