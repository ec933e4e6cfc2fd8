#pragma once
// What every output writer shares: a file is written under a temporary name in its own
// folder and renamed over the target only once complete (a rename within one folder is
// atomic, so readers and interrupted runs never see half a file), and GDAL failures
// become exceptions that name the file the caller asked for.
#include <gdal_priv.h>

#include <filesystem>
#include <functional>
#include <span>
#include <string_view>

#include "gdal/gdal_errors.hpp"
#include "writers/records.hpp"

namespace mgpr::runtime::output {

// Asked while a long write runs: true once the run was asked to stop.
using StopRequested = std::function<bool()>;

// GDAL's driver `name`, with all drivers registered on first use.
GDALDriver& driver(const char* name, const std::filesystem::path& file);

// Throws std::runtime_error "cannot write '<file>': <what>: <GDAL's last message>".
[[noreturn]] void fail(const std::filesystem::path& file, std::string_view what);

// Closes `dataset`; GDAL flushes on close, so a full disk shows up here.
void close(GDALDatasetUniquePtr& dataset, const std::filesystem::path& file);

// Written as partial_path(target) (writers/partial_names.hpp), removed on destruction
// unless commit() renamed it over the target. Declare it before the
// dataset writing it, so the dataset is closed first. `sidecars`: the extensions of the
// files a format writes beside the main one (a Shapefile's .dbf, ...), renamed before it,
// so that the main file's name still marks a complete set; a sidecar this write lacks is
// removed from the target's (a stale .prj would give the new file an old CRS).
class PartialFile {
 public:
  explicit PartialFile(std::filesystem::path target, std::span<const std::string_view> sidecars = {});
  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return partial_; }
  [[nodiscard]] const std::filesystem::path& target() const { return target_; }
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path partial_;
  std::span<const std::string_view> sidecars_;
  bool committed_ = false;
};

// A record's polygon as OGR's, its rings closed (vector_layer.cpp).
OGRPolygon ogr_polygon(const Geometry& geometry);

}  // namespace mgpr::runtime::output
