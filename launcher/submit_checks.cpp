#include "submit_checks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "mgpr/error.hpp"
#include "mgpr/input_kind.hpp"
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
    if (input.starts_with('@')) continue;
    const auto shown = redact_input(input);
    if (shown == input) continue;
    throw UsageError(fmt::format(
        "input '{}' carries credentials (a URL's query string, such as a presigned URL's signature, user:password@, "
        "or /vsicrypt/'s key), and mgpr-submit would write it into the job script; put it in a list file only you "
        "can read, one input a line (umask 077; echo 'URL' > urls.txt), and pass @urls.txt instead",
        shown));
  }
}

// One raster of the expanded inputs, as far as this node can see it (mgpr/input_kind.hpp):
// a local file is checked; a /vsi path's local archive or file is checked, the member
// inside it is left to the job (GDAL reads the archive there); what goes over the network
// is counted, not opened; what the job could never read is refused.
void check_raster(const std::string& raster, InputCheck& checked) {
  const auto classified = classify_input(raster);
  if (classified.remote) {
    checked.remote.push_back(raster);
    return;
  }
  if (classified.kind == InputKind::kLocalPath) {
    check_readable_file(raster, "raster", "check the path (relative paths are from the current folder)");
    ++checked.local;
    return;
  }
  if (const auto* memory = classified.first_layer(VsiRole::kMemory)) {
    throw UsageError(fmt::format(
        "input '{}' is in GDAL's in-memory file system ({}/), which is empty when the job's mgpr starts; give the "
        "raster's path on a file system the job's nodes read",
        raster, memory->prefix));
  }
  if (classified.first_layer(VsiRole::kStdin) != nullptr) {
    throw UsageError(fmt::format(
        "input '{}' reads the standard input, which a batch job does not have; save the stream to a file and give "
        "its path (or run `srun mgpr /vsistdin/` yourself with the stream piped in)",
        raster));
  }
  const bool unknown = classified.first_layer(VsiRole::kUnknown) != nullptr;
  if (classified.kind == InputKind::kVsiPath && classified.has_local_file() && !unknown) {
    const std::string file(local_file_of(raster, classified));
    const auto& outer = classified.layers.front();
    check_readable_file(file,
                        fmt::format("{} of raster '{}'", outer.role == VsiRole::kArchive ? "archive" : "file", raster),
                        outer.role == VsiRole::kArchive
                            ? fmt::format("check the path before the member (an archive whose name does not end in "
                                          "one GDAL knows is written in braces: {}/{{path/to/archive}}/member)",
                                          outer.prefix)
                            : std::string("check the path (relative paths are from the current folder)"));
    ++checked.local;
    return;
  }
  checked.unchecked.push_back(raster);
}

}  // namespace

InputCheck check_inputs(const RunConfig& config) {
  InputCheck checked;
  if (!config.use_fake_data) {
    refuse_credentials_in_job_script(config);
    for (const auto& raster : expand_inputs(config.image_path, {config.image_glob, config.recursive})) {
      check_raster(raster, checked);
    }
  }
  if (!config.model.starts_with("builtin:")) {
    check_readable_file(config.model, "model", "give a TorchScript file or model=builtin:resnet50");
  }
  check_writable_dir(config.output_dir);
  return checked;
}

std::vector<std::string> unchecked_input_notes(std::span<const std::string> unchecked) {
  if (unchecked.empty()) return {};
  return {fmt::format(
      "{} raster(s), e.g. {}: not checked from this node (a GDAL driver's own syntax, or a /vsi file system mgpr "
      "does not know); the job opens them first and names any it cannot read",
      unchecked.size(), redact_input(unchecked.front()))};
}

std::vector<std::string> remote_input_notes(std::span<const std::string> remote, const CredentialHints& hints) {
  std::vector<std::string> notes;
  if (remote.empty()) return notes;
  notes.push_back(fmt::format(
      "{} remote raster(s), e.g. {}: not opened from this node (the job opens them first and names any it cannot "
      "read); their credentials come from the job's environment and ~/.aws, ~/.config/gcloud, never the job script",
      remote.size(), redact_input(remote.front())));
  // By the network file system anywhere in the chain: /vsizip//vsis3/... needs AWS's too.
  const auto any_with = [&](std::string_view family) {
    return std::any_of(remote.begin(), remote.end(), [&](const std::string& raster) {
      const auto* network = classify_input(raster).network_layer();
      return network != nullptr && network->family == family;
    });
  };
  if (any_with("/vsis3") && !hints.aws) {
    notes.push_back(
        "no AWS credentials found (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/credentials or ~/.aws/config): a private "
        "bucket will refuse the job; set them, or AWS_NO_SIGN_REQUEST=YES for a public bucket");
  }
  if (any_with("/vsigs") && !hints.google) {
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
