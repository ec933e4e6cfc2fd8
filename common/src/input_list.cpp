#include "mgpr/input_list.hpp"

#include <fmt/format.h>
#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unordered_set>

#include "mgpr/error.hpp"
#include "mgpr/input_kind.hpp"

namespace mgpr {
namespace fs = std::filesystem;
namespace {

bool is_raster_name(const fs::path& file, const InputRules& rules) {
  const auto name = file.filename().string();
  if (!rules.image_glob.empty()) return ::fnmatch(rules.image_glob.c_str(), name.c_str(), 0) == 0;
  auto extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(std::begin(kRasterExtensions), std::end(kRasterExtensions), extension) !=
         std::end(kRasterExtensions);
}

std::string what_a_folder_takes(const InputRules& rules) {
  if (!rules.image_glob.empty()) return fmt::format("files matching image_glob='{}'", rules.image_glob);
  std::string names;
  for (const auto extension : kRasterExtensions) names += fmt::format("{}*{}", names.empty() ? "" : ", ", extension);
  return fmt::format("rasters ({})", names);
}

std::vector<std::string> list_folder(const fs::path& folder, const InputRules& rules) {
  std::vector<std::string> found;
  std::error_code error;
  const auto take = [&](const fs::directory_entry& entry) {
    std::error_code entry_error;
    if (entry.is_regular_file(entry_error) && is_raster_name(entry.path(), rules))
      found.push_back(entry.path().string());
  };
  if (rules.recursive) {
    fs::recursive_directory_iterator walk(folder, fs::directory_options::skip_permission_denied, error);
    for (; !error && walk != fs::recursive_directory_iterator(); walk.increment(error)) {
      // Hidden folders (.git, .snapshot, a viewer's cache) hold no inputs.
      if (walk->is_directory() && walk->path().filename().string().starts_with(".")) {
        walk.disable_recursion_pending();
        continue;
      }
      take(*walk);
    }
  } else {
    fs::directory_iterator walk(folder, error);
    for (; !error && walk != fs::directory_iterator(); walk.increment(error)) take(*walk);
  }
  if (error) {
    throw UsageError(
        fmt::format("input folder '{}' cannot be listed: {}; check its permissions", folder.string(), error.message()));
  }
  if (found.empty()) {
    throw UsageError(fmt::format("input folder '{}' holds no {}{}; give image_glob='*.ext' for other names{}",
                                 folder.string(), what_a_folder_takes(rules),
                                 rules.recursive ? " in any subfolder" : "",
                                 rules.recursive ? "" : ", or recursive=true for the subfolders'"));
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> expand_pattern(const std::string& pattern) {
  glob_t matches{};
  const int status = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
  const std::unique_ptr<glob_t, decltype(&::globfree)> release(&matches, &::globfree);
  std::vector<std::string> found;
  if (status == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
      std::error_code error;
      if (fs::is_regular_file(matches.gl_pathv[i], error)) found.emplace_back(matches.gl_pathv[i]);
    }
  }
  if (found.empty()) {
    throw UsageError(
        fmt::format("input pattern '{}' matches no file; check the pattern (it is matched against files from {}), or "
                    "give a folder with image_glob='*.tif'",
                    pattern, fs::current_path().string()));
  }
  return found;  // glob(3) sorts them
}

// A list's line as the list's folder sees it: a relative path, or the relative archive or
// file inside a /vsi path ("/vsizip/a.zip/x.tif"), is taken from `folder`.
std::string relative_to(const fs::path& folder, const std::string& line) {
  const auto classified = classify_input(line);
  if (classified.kind != InputKind::kLocalPath && classified.kind != InputKind::kVsiPath) return line;
  const auto file = local_file_of(line, classified);
  if (file.empty() || file.starts_with('/')) return line;
  return with_local_file(line, classified, (folder / file).string());
}

std::vector<std::string> read_list_file(const std::string& name) {
  std::ifstream file(name);
  std::error_code error;
  if (!file || fs::is_directory(name, error)) {
    throw UsageError(fmt::format(
        "input list '@{}' cannot be read (it should be a text file with one raster path or URL per line); check the "
        "path after '@' (relative paths start from {})",
        name, fs::current_path().string()));
  }
  const auto folder = fs::path(name).parent_path();
  std::vector<std::string> entries;
  std::string line;
  int number = 0;
  while (std::getline(file, line)) {
    ++number;
    // Lists written on Windows or by spreadsheets end lines with \r and may pad them.
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (line.starts_with('@')) {
      throw UsageError(
          fmt::format("input list '@{}' line {} names another list ('{}'); lists do not nest: put its "
                      "lines into this list, or give both lists as inputs",
                      name, number, line));
    }
    entries.push_back(relative_to(folder, line));
  }
  if (entries.empty()) {
    throw UsageError(
        fmt::format("input list '@{}' names no raster (blank lines and lines starting with # are "
                    "skipped); write one raster path or URL per line",
                    name));
  }
  return entries;
}

void expand_one(const std::string& input, const InputRules& rules, std::vector<std::string>& rasters) {
  const auto classified = classify_input(input);
  switch (classified.kind) {
    case InputKind::kUrl:
      rasters.push_back(gdal_path_of(input));
      return;
    case InputKind::kOtherUrl:
      throw UsageError(fmt::format(
          "input '{}' is a URL mgpr does not read: it reads https://, http://, s3:// and gs:// URLs; write other "
          "storage as GDAL's path (az://container/blob as /vsiaz/container/blob, ftp://host/a.tif as "
          "/vsicurl/ftp://host/a.tif)",
          redact_input(input)));
    case InputKind::kVsiPath:
      if (const auto* write_only = classified.first_layer(VsiRole::kWriteOnly)) {
        throw UsageError(fmt::format(
            "input '{}' names {}/, which GDAL can only write to; give a raster to read (a path, a URL or a /vsi path)",
            input, write_only->prefix));
      }
      rasters.push_back(input);
      return;
    case InputKind::kLocalPath:
      break;
    default:
      rasters.push_back(input);  // a driver's own syntax: GDAL says whether it opens
      return;
  }
  switch (local_path_kind(input)) {
    case LocalPathKind::kFolder:
      for (auto& raster : list_folder(input, rules)) rasters.push_back(std::move(raster));
      return;
    case LocalPathKind::kPattern:
      for (auto& raster : expand_pattern(input)) rasters.push_back(std::move(raster));
      return;
    case LocalPathKind::kFile:
      rasters.push_back(input);
      return;
  }
}

}  // namespace

bool is_remote_input(std::string_view input) { return classify_input(input).remote; }

std::string gdal_path_of(std::string_view input) {
  const auto family = vsi_family_of_url(input);
  if (family.empty()) return std::string(input);
  // /vsicurl/ takes the whole URL; /vsis3/ and /vsigs/ the bucket and key after "s3://".
  if (family == "/vsicurl") return fmt::format("{}/{}", family, input);
  return fmt::format("{}/{}", family, input.substr(input.find("://") + 3));
}

std::string redact_input(std::string_view input) {
  const auto classified = classify_input(input);
  // A query string of what is read over the network (a URL's, or /vsicurl?url=...); the
  // '?' of /vsicached?file= or /vsistdin?buffer_limit= holds no secret.
  const bool networked = classified.remote || classified.kind == InputKind::kOtherUrl;
  std::string shown(input.substr(0, networked ? input.find('?') : std::string_view::npos));
  if (shown.size() < input.size()) shown += "?…";
  // /vsicrypt/key=SECRET,file=...: the key (or key_b64) is a secret.
  const auto is_crypt = [](const VsiLayer& layer) { return layer.family == "/vsicrypt"; };
  if (std::any_of(classified.layers.begin(), classified.layers.end(), is_crypt)) {
    for (const std::string_view option : {"key=", "key_b64="}) {
      for (auto at = shown.find(option); at != std::string::npos; at = shown.find(option, at + 1)) {
        if (at > 0 && shown[at - 1] != '/' && shown[at - 1] != ',') continue;
        const auto value = at + option.size();
        shown.replace(value, std::min(shown.find(',', value), shown.size()) - value, "***");
      }
    }
  }
  // scheme://user:password@host/...: drop the credentials.
  if (const auto scheme_end = shown.find("://"); scheme_end != std::string::npos) {
    const auto host_start = scheme_end + 3;
    const auto path_start = shown.find('/', host_start);
    const auto at = shown.rfind('@', path_start == std::string::npos ? shown.size() : path_start);
    if (at != std::string::npos && at >= host_start) shown.erase(host_start, at + 1 - host_start);
  }
  return shown;
}

std::vector<std::string> expand_inputs(std::span<const std::string> inputs, const InputRules& rules) {
  std::vector<std::string> expanded;
  for (const auto& input : inputs) {
    if (input.starts_with('@')) {
      for (const auto& entry : read_list_file(input.substr(1))) expand_one(entry, rules, expanded);
    } else {
      expand_one(input, rules, expanded);
    }
  }
  // A folder and a file in it, or two overlapping patterns: each raster once.
  std::unordered_set<std::string> seen;
  std::vector<std::string> rasters;
  for (auto& raster : expanded) {
    // Only a path on this machine is normalised: in a URL or a /vsi path "//" means something.
    const auto key =
        classify_input(raster).kind == InputKind::kLocalPath ? fs::path(raster).lexically_normal().string() : raster;
    if (seen.insert(key).second) rasters.push_back(std::move(raster));
  }
  return rasters;
}

}  // namespace mgpr
