#include "gdal/remote_reads.hpp"

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>
#include <cpl_vsi_error.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <regex>
#include <string>

#include "mgpr/input_kind.hpp"

namespace mgpr::runtime {
namespace {

// GDAL's network file systems by family (their _streaming forms fold into these).
constexpr std::array<std::string_view, 9> kNetworkFamilies = {
    "/vsicurl", "/vsis3", "/vsigs", "/vsiaz", "/vsiadls", "/vsioss", "/vsiswift", "/vsiwebhdfs", "/vsihdfs"};

// Object stores whose paths are /vsiXX/bucket/key (/vsiaz/: container/blob).
constexpr std::array<std::string_view, 5> kBucketPrefixes = {"/vsis3", "/vsigs", "/vsiaz", "/vsiadls", "/vsioss"};

// Configuration options whose values are secrets (or identify one).
constexpr std::array<const char*, 12> kSecretOptions = {"AWS_SECRET_ACCESS_KEY",   "AWS_ACCESS_KEY_ID",
                                                        "AWS_SESSION_TOKEN",       "GS_SECRET_ACCESS_KEY",
                                                        "GS_ACCESS_KEY_ID",        "GS_OAUTH2_REFRESH_TOKEN",
                                                        "GS_OAUTH2_CLIENT_SECRET", "AZURE_STORAGE_ACCESS_KEY",
                                                        "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
                                                        "OSS_SECRET_ACCESS_KEY",   "SWIFT_AUTH_TOKEN"};

// The first network file system in `path`'s chain (mgpr/input_kind.hpp: also inside
// /vsizip/ and the like): its family ("/vsis3" for /vsis3_streaming/) and the part of
// `path` it reads; an empty family when none.
struct NetworkPart {
  std::string_view family;
  std::string_view own_path;  // "/vsis3/b/x.zip" in "/vsizip//vsis3/b/x.zip/y.tif"
};

NetworkPart network_part(std::string_view path) {
  const auto classified = classify_input(path);
  const auto* network = classified.network_layer();
  if (network == nullptr) return {};
  // The family as one of the static names below, so it outlives `classified`.
  const auto found = std::find(kNetworkFamilies.begin(), kNetworkFamilies.end(), network->family);
  return {found == kNetworkFamilies.end() ? std::string_view("/vsicurl") : *found,
          path.substr(network->at, network->size)};
}

// "/vsis3/bucket/key" → "bucket" (also after /vsis3_streaming/); empty when not a bucket path.
std::string bucket_of(std::string_view path) {
  const auto [family, own_path] = network_part(path);
  if (family.empty() || std::find(kBucketPrefixes.begin(), kBucketPrefixes.end(), family) == kBucketPrefixes.end()) {
    return {};
  }
  // After "/vsis3/" or "/vsis3_streaming/".
  auto rest = own_path.substr(std::min(own_path.size(), own_path.find('/', 1)));
  rest = rest.substr(rest.empty() ? 0 : 1);
  return std::string(rest.substr(0, rest.find('/')));
}

bool contains_any(const std::string& text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view needle) { return text.find(needle) != std::string::npos; });
}

std::string s3_endpoint() {
  const char* endpoint = CPLGetConfigOption("AWS_S3_ENDPOINT", nullptr);
  return endpoint != nullptr && *endpoint != '\0' ? std::string(endpoint) : std::string("s3.amazonaws.com");
}

// Where the credentials of a bucket path come from, and the fix when they fail.
std::string credentials_fix(std::string_view prefix) {
  if (prefix == "/vsigs") {
    return "check GOOGLE_APPLICATION_CREDENTIALS (a service account's JSON key), GS_ACCESS_KEY_ID/"
           "GS_SECRET_ACCESS_KEY (HMAC keys) or ~/.boto, or GS_NO_SIGN_REQUEST=YES for a public bucket";
  }
  if (prefix == "/vsiaz" || prefix == "/vsiadls") {
    return "check AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_ACCESS_KEY or "
           "AZURE_STORAGE_SAS_TOKEN";
  }
  if (prefix == "/vsioss") return "check OSS_ACCESS_KEY_ID/OSS_SECRET_ACCESS_KEY";
  return "check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials (AWS_PROFILE picks its section), "
         "or AWS_NO_SIGN_REQUEST=YES for a public bucket";
}

}  // namespace

bool is_remote_path(std::string_view path) { return classify_input(path).remote; }

const std::vector<RemoteReadSetting>& remote_read_defaults() {
  static const std::vector<RemoteReadSetting> defaults = {
      // A window over several COG blocks in one request when the blocks are adjacent.
      {"GDAL_HTTP_MERGE_CONSECUTIVE_RANGES", "YES"},
      // HTTP/2 where the server offers it (h2c upgrade over http://, ALPN over https://),
      // with the ranges of one window multiplexed on one connection; HTTP/1.1 otherwise.
      {"GDAL_HTTP_VERSION", "2"},
      {"GDAL_HTTP_MULTIPLEX", "YES"},
      // GDAL retries 429, 500, 502, 503 and 504 answers (and a few curl time-outs) itself,
      // the delay doubling from GDAL_HTTP_RETRY_DELAY seconds; mgpr's reader retries what
      // GDAL does not (source/read_retry.hpp) with the same two settings.
      {"GDAL_HTTP_MAX_RETRY", "5"},
      {"GDAL_HTTP_RETRY_DELAY", "1"},
      {"GDAL_HTTP_CONNECTTIMEOUT", "15"},
      {"GDAL_HTTP_TIMEOUT", "120"},
      // Read-ahead of small reads (the TIFF header and tile index): 64 KiB a request
      // instead of 16 KiB. Whole blocks are fetched by range whatever this size.
      {"CPL_VSIL_CURL_CHUNK_SIZE", "65536"},
      // The downloaded blocks GDAL keeps: sized by the readers, size_remote_block_cache.
  };
  return defaults;
}

void configure_remote_reads() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& setting : remote_read_defaults()) {
      const std::string key(setting.key);
      if (CPLGetConfigOption(key.c_str(), nullptr) == nullptr) {
        CPLSetConfigOption(key.c_str(), std::string(setting.value).c_str());
      }
    }
  });
}

void size_remote_block_cache(int readers) {
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  if (CPLGetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", nullptr) != nullptr) return;
  const auto bytes =
      std::clamp(kRemoteCacheBytesPerReader * std::max(1, readers), kRemoteCacheMinBytes, kRemoteCacheMaxBytes);
  CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", std::to_string(bytes).c_str());
}

OpenWithoutListing::OpenWithoutListing(std::string_view path) {
  if (CPLGetConfigOption(kReadDirOnOpen, nullptr) != nullptr) return;
  if (const char* before = CPLGetThreadLocalConfigOption(kReadDirOnOpen, nullptr)) previous_ = before;
  CPLSetThreadLocalConfigOption(kReadDirOnOpen, is_remote_path(path) ? "EMPTY_DIR" : "TRUE");
  active_ = true;
}

OpenWithoutListing::~OpenWithoutListing() {
  if (active_) CPLSetThreadLocalConfigOption(kReadDirOnOpen, previous_ ? previous_->c_str() : nullptr);
}

std::string redact_secrets(std::string text) {
  for (const char* option : kSecretOptions) {
    const char* value = CPLGetConfigOption(option, nullptr);
    if (value == nullptr || std::string_view(value).size() < 4) continue;  // "" or "NO" is no secret
    for (auto at = text.find(value); at != std::string::npos; at = text.find(value, at + 3)) {
      text.replace(at, std::string_view(value).size(), "***");
    }
  }
  // Query strings of URLs (presigned URLs, SAS tokens, ?access_key=...).
  static const std::regex query(R"((https?://[^\s'"?]*)\?[^\s'"]*)", std::regex::icase);
  text = std::regex_replace(text, query, "$1?...");
  // Signed headers, were any echoed: Credential=AKIA.../..., Signature=hex.
  static const std::regex signed_fields(
      R"((Credential|Signature|X-Amz-Signature|X-Amz-Credential|AWSAccessKeyId)=[^\s,&'"]*)", std::regex::icase);
  text = std::regex_replace(text, signed_fields, "$1=***");
  static const std::regex key_elements(R"(<(AWSAccessKeyId|SignatureProvided|StringToSign|CanonicalRequest)>[^<]*</)");
  text = std::regex_replace(text, key_elements, "<$1>***</");
  return text;
}

std::string shown_remote_path(std::string_view path) {
  // After the file system's name, so /vsicurl?url=... keeps its form.
  const auto [family, own_path] = network_part(path);
  const auto at = family.empty() ? 0 : static_cast<std::size_t>(own_path.data() - path.data()) + family.size() + 1;
  const auto query = path.find('?', std::min(at, path.size()));
  if (query == std::string_view::npos) return redact_secrets(std::string(path));
  return redact_secrets(std::string(path.substr(0, query))) + "?...";
}

std::optional<std::string> explain_remote_open_failure(const std::string& path) {
  const auto prefix = network_part(path).family;
  if (prefix.empty()) return std::nullopt;
  const std::string open_message = CPLGetLastErrorMsg();
  // GDALOpen's own message is often only "not recognized as a supported file format";
  // the file system says why when asked directly, without the answer it cached.
  forget_remote_file(path);
  VSIErrorReset();
  CPLErrorReset();
  VSIStatBufL stat{};
  const bool exists = VSIStatExL(path.c_str(), &stat, VSI_STAT_EXISTS_FLAG | VSI_STAT_SET_ERROR_FLAG) == 0;
  const VSIErrorNum vsi_error = VSIGetLastErrorNo();
  const std::string detail = fmt::format("{} {} {}", open_message, VSIGetLastErrorMsg(), CPLGetLastErrorMsg());
  const std::string shown = shown_remote_path(path);
  const std::string bucket = bucket_of(path);
  const std::string where = bucket.empty() ? fmt::format("'{}'", shown) : fmt::format("bucket '{}'", bucket);
  // GDAL's own words, shortened and without any secret.
  std::string reason = redact_secrets(std::string(VSIGetLastErrorMsg()));
  if (reason.empty()) reason = redact_secrets(open_message);
  if (reason.size() > 300) reason = reason.substr(0, 300) + "...";

  if (exists) {
    return fmt::format(
        "remote raster '{}' was found but GDAL cannot open it as a raster: {}; check that the object is a "
        "complete GeoTIFF/COG or another format GDAL reads (`gdalinfo {}` shows what GDAL sees)",
        shown, redact_secrets(open_message), shown);
  }
  if (contains_any(detail, {"configuration options not defined", "not filled", "No valid GCS credentials",
                            "GS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS"}) &&
      !contains_any(detail, {"HTTP response code", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"})) {
    return fmt::format("no credentials were found for {} (raster '{}'): {}", where, shown, credentials_fix(prefix));
  }
  if (vsi_error == VSIE_AWSAccessDenied || vsi_error == VSIE_AWSInvalidCredentials ||
      vsi_error == VSIE_AWSSignatureDoesNotMatch ||
      contains_any(detail, {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken",
                            "ExpiredToken", "HTTP response code: 403", "HTTP response code: 401",
                            "HTTP error code: 403", "HTTP error code: 401"})) {
    if (bucket.empty()) {
      return fmt::format(
          "the server refused access to remote raster '{}' (HTTP 401/403): the URL needs credentials or a "
          "valid signature; for a bucket, read it as s3://bucket/key or gs://bucket/key with credentials from "
          "the environment",
          shown);
    }
    return fmt::format("the credentials were refused for bucket '{}' (raster '{}', endpoint {}): {}", bucket, shown,
                       prefix == "/vsis3" ? s3_endpoint() : std::string(prefix.substr(1)), credentials_fix(prefix));
  }
  if (vsi_error == VSIE_AWSBucketNotFound || contains_any(detail, {"NoSuchBucket"})) {
    return fmt::format("bucket '{}' does not exist{} (raster '{}'); check the bucket's name", bucket,
                       prefix == "/vsis3" ? fmt::format(" on {}", s3_endpoint()) : std::string(), shown);
  }
  if (contains_any(detail, {"Couldn't connect", "Could not connect", "Failed to connect", "Connection refused",
                            "Could not resolve", "Couldn't resolve", "timed out", "Timeout was reached", "SSL",
                            "Empty reply", "Recv failure", "Connection reset"})) {
    return fmt::format(
        "cannot reach the server of remote raster '{}': {}; check the URL{} and that this machine can reach it "
        "(`curl -I` on the URL)",
        shown, reason, prefix == "/vsis3" ? fmt::format(" and the endpoint (AWS_S3_ENDPOINT: {})", s3_endpoint()) : "");
  }
  if (vsi_error == VSIE_AWSObjectNotFound || contains_any(detail, {"NoSuchKey", "404", "does not exist"})) {
    return fmt::format("remote raster '{}' does not exist{}; check the URL or the key", shown,
                       bucket.empty() ? std::string() : fmt::format(" in bucket '{}'", bucket));
  }
  return fmt::format("remote raster '{}' cannot be opened: {}; check the URL and, for a bucket, the credentials ({})",
                     shown, reason.empty() ? "GDAL gave no reason" : reason, credentials_fix(prefix));
}

void forget_remote_file(const std::string& path) {
  const auto [family, own_path] = network_part(path);
  if (family.empty()) return;
  // The network file system's own path (the archive inside /vsizip/..., not its member),
  // as it caches it.
  VSICurlPartialClearCache(std::string(own_path).c_str());
}

}  // namespace mgpr::runtime
