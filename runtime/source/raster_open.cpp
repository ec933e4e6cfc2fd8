#include "source/raster_open.hpp"

#include <cpl_error.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <string_view>

#include "gdal/gdal_errors.hpp"
#include "gdal/remote_reads.hpp"
#include "mgpr/error.hpp"
#include "mgpr/input_kind.hpp"
#include "source/raster_reader.hpp"

namespace mgpr::runtime {
namespace {

// What a path is when it is neither a file nor a folder (which some formats are); empty
// otherwise. GDAL's open of a FIFO waits for a writer, forever.
std::string_view special_kind(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || S_ISREG(status.st_mode) || S_ISDIR(status.st_mode)) return {};
  if (S_ISFIFO(status.st_mode)) return "FIFO";
  if (S_ISSOCK(status.st_mode)) return "socket";
  if (S_ISCHR(status.st_mode)) return "character device";
  if (S_ISBLK(status.st_mode)) return "block device";
  return "special file";
}

// A path on this machine's file system, which the file system can be asked about (not a
// /vsi path, a URL or a driver's DRIVER:file:subdataset syntax).
bool is_local_path(const std::string& path) { return classify_input(path).kind == InputKind::kLocalPath; }

// The local archive or file a /vsi path reads through (/vsizip/a.zip/x.tif: a.zip), when
// it does not exist; empty otherwise.
std::string missing_local_file_of(const std::string& path) {
  const auto classified = classify_input(path);
  if (classified.kind != InputKind::kVsiPath) return {};
  const std::string file(local_file_of(path, classified));
  std::error_code error;
  return file.empty() || std::filesystem::exists(file, error) ? std::string() : file;
}

}  // namespace

GDALDatasetUniquePtr open_or_explain(const std::string& path) {
  if (is_local_path(path)) {
    if (const auto kind = special_kind(path); !kind.empty()) {
      throw UsageError(
          fmt::format("raster '{}' is a {}, not a raster file; give the path of a GeoTIFF or another "
                      "raster file GDAL reads (a pipe can be copied to a file first)",
                      path, kind));
    }
  }
  CPLErrorReset();
  auto dataset = open_raster_dataset(path);
  if (dataset) return dataset;
  if (auto remote = explain_remote_open_failure(path)) throw UsageError(*remote);
  std::error_code error;
  if (is_local_path(path) && !std::filesystem::exists(path, error)) {
    throw UsageError(
        fmt::format("raster '{}' does not exist; check the path (relative paths start from {}), or "
                    "pass use_fake_data=true for a fake-data environment check",
                    path, std::filesystem::current_path(error).string()));
  }
  if (const auto missing = missing_local_file_of(path); !missing.empty()) {
    throw UsageError(fmt::format(
        "raster '{}' is read from '{}', which does not exist; check the path before the member (relative paths "
        "start from {})",
        path, missing, std::filesystem::current_path(error).string()));
  }
  const std::string reason = gdal_last_error("GDAL recognises no raster format in it");
  throw UsageError(
      fmt::format("raster '{}' cannot be opened as a raster: {}; check that it is a complete GeoTIFF "
                  "or another format GDAL reads (`gdalinfo {}` shows what GDAL sees), and copy it "
                  "again if it was cut short",
                  path, reason, path));
}

}  // namespace mgpr::runtime
