#include "writers/gdal_write.hpp"

#include <cpl_error.h>
#include <fmt/format.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

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

void fail(const std::filesystem::path& file, std::string_view what) {
  throw std::runtime_error(
      fmt::format("cannot write '{}': {}: {}", file.string(), what, gdal_last_error("GDAL gave no reason")));
}

void close(GDALDatasetUniquePtr& dataset, const std::filesystem::path& file) {
  CPLErrorReset();
  dataset.reset();
  if (CPLGetLastErrorType() >= CE_Failure) fail(file, "closing it failed");
}

PartialFile::PartialFile(std::filesystem::path target) : target_(std::move(target)) {
  partial_ =
      target_.parent_path() / fmt::format(".{}.partial{}", target_.filename().string(), target_.extension().string());
  // A run killed earlier may have left one; drivers differ on whether they overwrite.
  std::error_code ignored;
  std::filesystem::remove(partial_, ignored);
}

PartialFile::~PartialFile() {
  if (committed_) return;
  std::error_code ignored;
  std::filesystem::remove(partial_, ignored);
}

void PartialFile::commit() {
  std::error_code error;
  std::filesystem::rename(partial_, target_, error);
  if (error) {
    throw std::runtime_error(fmt::format("cannot write '{}': renaming the complete '{}' over it failed: {}",
                                         target_.string(), partial_.string(), error.message()));
  }
  committed_ = true;
}

}  // namespace mgpr::runtime::output
