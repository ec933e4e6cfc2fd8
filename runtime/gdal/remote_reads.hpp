#pragma once
// Remote rasters: the paths GDAL reads over the network (/vsicurl/, /vsis3/, /vsigs/ and
// GDAL's other network file systems), GDAL's settings for reading them from object
// storage, and their failures told in words that name the URL or bucket and never a
// secret.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr::runtime {

// A path GDAL reads over the network: common's one rule (mgpr/input_kind.hpp's
// classify_input(path).remote): /vsicurl/, /vsis3/, /vsigs/, /vsiaz/, /vsiadls/,
// /vsioss/, /vsiswift/, /vsiwebhdfs/, /vsihdfs/ (their _streaming forms too), also inside
// another file system (/vsizip//vsis3/...).
bool is_remote_path(std::string_view path);

// One GDAL configuration option mgpr sets for remote reads unless the user set it.
struct RemoteReadSetting {
  std::string_view key;
  std::string_view value;
};

// The defaults configure_remote_reads() applies, in order.
const std::vector<RemoteReadSetting>& remote_read_defaults();

// Sets each of remote_read_defaults() as a GDAL configuration option unless the user
// already set it (environment variable or an earlier CPLSetConfigOption). Idempotent.
void configure_remote_reads();

// GDAL's cache of downloaded blocks (CPL_VSIL_CURL_CACHE_SIZE), shared by every handle:
// kRemoteCacheBytesPerReader for each of `readers` reader threads, so each keeps the
// blocks of the windows it reads ahead, within [kRemoteCacheMinBytes,
// kRemoteCacheMaxBytes]. Left alone when already set (by the user, or by an earlier call:
// GDAL sizes the cache once, at the first remote read, so this must come before it).
inline constexpr std::int64_t kRemoteCacheBytesPerReader = std::int64_t{32} << 20;
inline constexpr std::int64_t kRemoteCacheMinBytes = std::int64_t{128} << 20;
inline constexpr std::int64_t kRemoteCacheMaxBytes = std::int64_t{1} << 30;
void size_remote_block_cache(int readers);

// While it lives, opening `path` on this thread does not list its folder for side-car
// files (GDAL_DISABLE_READDIR_ON_OPEN). A remote raster gets EMPTY_DIR: no side-car is
// looked for, one request less per open, and on object storage no listing of a whole
// prefix. A local raster gets TRUE: GDAL probes for its .msk, .aux.xml, .ovr and world
// files one by one (stat) instead of reading the whole folder, which for a folder of
// 10,000 tiles made every open read 10,000 names (the run 2.3x the same tiles in one
// raster; 1.24x with probing). A value the user set (environment or --config) decides.
class OpenWithoutListing {
 public:
  explicit OpenWithoutListing(std::string_view path);
  ~OpenWithoutListing();
  OpenWithoutListing(const OpenWithoutListing&) = delete;
  OpenWithoutListing& operator=(const OpenWithoutListing&) = delete;

 private:
  static constexpr const char* kReadDirOnOpen = "GDAL_DISABLE_READDIR_ON_OPEN";
  bool active_ = false;
  std::optional<std::string> previous_;  // this thread's own value before
};

// `text` with every secret mgpr can know of replaced by "***": the values of
// AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN, GS_SECRET_ACCESS_KEY,
// GS_ACCESS_KEY_ID, GS_OAUTH2_REFRESH_TOKEN, AZURE_STORAGE_ACCESS_KEY and the like when
// set, the query string of any URL (presigned URLs carry X-Amz-Signature, SAS tokens,
// access keys there) and Credential=/Signature= fields of an Authorization header.
std::string redact_secrets(std::string text);

// The URL or bucket path of a remote raster as messages show it: the path with any
// query string removed ("?..." instead).
std::string shown_remote_path(std::string_view path);

// When `path` is remote: the message of the UsageError for GDAL's failure to open it
// (call right after the failed open, on the same thread): names the URL or the bucket,
// says what is wrong (credentials refused, no credentials, bucket or object missing,
// server unreachable) and the fix, with no secret in it. nullopt for a local path.
std::optional<std::string> explain_remote_open_failure(const std::string& path);

// Forgets what GDAL's network file systems cached about `path` (its size, its blocks),
// so the next open and read ask the server again: after a failed read a cached short or
// missing answer would otherwise fail every retry. No-op for a local path.
void forget_remote_file(const std::string& path);

}  // namespace mgpr::runtime
