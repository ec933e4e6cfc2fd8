#include "submit_checks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "mgpr/error.hpp"
#include "mgpr/input_list.hpp"

namespace mgpr::launcher {
namespace fs = std::filesystem;
namespace {

void check_readable_file(const std::string& path, std::string_view what, std::string_view fix) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(fmt::format("{} '{}' does not exist; {}", what, path, fix));
  if (fs::is_directory(path, ec)) throw UsageError(fmt::format("{} '{}' is a folder, not a file; {}", what, path, fix));
  if (::access(path.c_str(), R_OK) != 0) {
    throw UsageError(fmt::format("{} '{}' cannot be read: {}; fix its permissions", what, path, std::strerror(errno)));
  }
}

// The nearest existing ancestor must be writable, so the runtime can create the rest.
void check_writable_dir(const std::string& path) {
  fs::path probe = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(probe, ec) && probe.has_parent_path() && probe != probe.parent_path()) probe = probe.parent_path();
  if (!fs::is_directory(probe, ec)) {
    throw UsageError(
        fmt::format("output_dir '{}': '{}' is not a folder; choose another output_dir", path, probe.string()));
  }
  if (::access(probe.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("output_dir '{}' cannot be written ('{}': {}); choose a folder you can write", path,
                                 probe.string(), std::strerror(errno)));
  }
}

// A URL that carries its own credentials: a query string (a presigned URL's signature, a
// SAS token) or user:password@. Such an input given directly would be written into the
// job script, which the cluster's administrators and its spool keep; a list file stays
// the user's and is read by the job.
void refuse_credentials_in_job_script(const RunConfig& config) {
  for (const auto& input : config.image_path) {
    if (input.starts_with('@') || !is_remote_input(input)) continue;
    const auto shown = redact_input(input);
    if (shown == input) continue;
    throw UsageError(fmt::format(
        "input '{}' carries credentials in its URL (a query string, such as a presigned URL's signature, or "
        "user:password@), and mgpr-submit would write it into the job script; put the URL in a list file only you "
        "can read, one URL a line (umask 077; echo 'URL' > urls.txt), and pass @urls.txt instead",
        shown));
  }
}

}  // namespace

InputCheck check_inputs(const RunConfig& config) {
  InputCheck checked;
  if (!config.use_fake_data) {
    refuse_credentials_in_job_script(config);
    for (const auto& raster : expand_inputs(config.image_path, {config.image_glob, config.recursive})) {
      if (is_remote_input(raster)) {
        checked.remote.push_back(raster);
        continue;
      }
      check_readable_file(raster, "raster", "check the path (relative paths are from the current folder)");
      ++checked.local;
    }
  }
  if (!config.model.starts_with("builtin:")) {
    check_readable_file(config.model, "model", "give a TorchScript file or model=builtin:resnet50");
  }
  check_writable_dir(config.output_dir);
  return checked;
}

std::vector<std::string> remote_input_notes(std::span<const std::string> remote, const CredentialHints& hints) {
  std::vector<std::string> notes;
  if (remote.empty()) return notes;
  notes.push_back(fmt::format(
      "{} remote raster(s), e.g. {}: not opened from this node (the job opens them first and names any it cannot "
      "read); their credentials come from the job's environment and ~/.aws, ~/.config/gcloud, never the job script",
      remote.size(), redact_input(remote.front())));
  const auto any_with = [&](std::string_view prefix) {
    return std::any_of(remote.begin(), remote.end(),
                       [&](const std::string& raster) { return raster.starts_with(prefix); });
  };
  if (any_with("/vsis3/") && !hints.aws) {
    notes.push_back(
        "no AWS credentials found (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/credentials or ~/.aws/config): a private "
        "bucket will refuse the job; set them, or AWS_NO_SIGN_REQUEST=YES for a public bucket");
  }
  if (any_with("/vsigs/") && !hints.google) {
    notes.push_back(
        "no Google Cloud credentials found (GOOGLE_APPLICATION_CREDENTIALS, GS_ACCESS_KEY_ID, ~/.boto, "
        "~/.config/gcloud): a private bucket will refuse the job; set them, or GS_NO_SIGN_REQUEST=YES for a public "
        "bucket");
  }
  return notes;
}

CredentialHints credential_hints_from_environment() {
  const auto set = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0';
  };
  const char* home = std::getenv("HOME");
  const auto home_has = [&](const char* file) {
    std::error_code ec;
    return home != nullptr && fs::exists(fs::path(home) / file, ec);
  };
  CredentialHints hints;
  hints.aws = set("AWS_ACCESS_KEY_ID") || set("AWS_PROFILE") || set("AWS_NO_SIGN_REQUEST") ||
              set("AWS_SHARED_CREDENTIALS_FILE") || set("AWS_CONFIG_FILE") || set("AWS_WEB_IDENTITY_TOKEN_FILE") ||
              home_has(".aws/credentials") || home_has(".aws/config");
  hints.google = set("GOOGLE_APPLICATION_CREDENTIALS") || set("GS_ACCESS_KEY_ID") || set("GS_OAUTH2_REFRESH_TOKEN") ||
                 set("GS_NO_SIGN_REQUEST") || home_has(".boto") || home_has(".config/gcloud");
  return hints;
}

}  // namespace mgpr::launcher
