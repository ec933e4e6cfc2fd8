#include "mgpr/input_kind.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <span>

namespace mgpr {
namespace {

constexpr auto npos = std::string_view::npos;

// The names an archive file system finds its archive by when it is not written in braces
// (GDAL's documentation of each; /vsizip/ also reads .kmz, .ods and .xlsx as zip files).
constexpr std::array<std::string_view, 4> kZipNames{".zip", ".kmz", ".ods", ".xlsx"};
constexpr std::array<std::string_view, 3> kTarNames{".tar.gz", ".tgz", ".tar"};
constexpr std::array<std::string_view, 6> k7zNames{".7z", ".lpkx", ".lpk", ".mpkx", ".mpk", ".ppkx"};
constexpr std::array<std::string_view, 1> kRarNames{".rar"};

struct KnownFileSystem {
  std::string_view prefix;
  VsiRole role;
  std::span<const std::string_view> archive_names{};
};

// Every file system GDAL's "Virtual File Systems" page documents.
constexpr std::array kKnownFileSystems{
    KnownFileSystem{"/vsicurl", VsiRole::kNetwork},
    KnownFileSystem{"/vsicurl_streaming", VsiRole::kNetwork},
    KnownFileSystem{"/vsis3", VsiRole::kNetwork},
    KnownFileSystem{"/vsis3_streaming", VsiRole::kNetwork},
    KnownFileSystem{"/vsigs", VsiRole::kNetwork},
    KnownFileSystem{"/vsigs_streaming", VsiRole::kNetwork},
    KnownFileSystem{"/vsiaz", VsiRole::kNetwork},
    KnownFileSystem{"/vsiaz_streaming", VsiRole::kNetwork},
    KnownFileSystem{"/vsiadls", VsiRole::kNetwork},
    KnownFileSystem{"/vsioss", VsiRole::kNetwork},
    KnownFileSystem{"/vsioss_streaming", VsiRole::kNetwork},
    KnownFileSystem{"/vsiswift", VsiRole::kNetwork},
    KnownFileSystem{"/vsiswift_streaming", VsiRole::kNetwork},
    KnownFileSystem{"/vsiwebhdfs", VsiRole::kNetwork},
    KnownFileSystem{"/vsihdfs", VsiRole::kNetwork},
    KnownFileSystem{"/vsizip", VsiRole::kArchive, kZipNames},
    KnownFileSystem{"/vsitar", VsiRole::kArchive, kTarNames},
    KnownFileSystem{"/vsi7z", VsiRole::kArchive, k7zNames},
    KnownFileSystem{"/vsirar", VsiRole::kArchive, kRarNames},
    KnownFileSystem{"/vsigzip", VsiRole::kFilter},
    KnownFileSystem{"/vsisubfile", VsiRole::kFilter},
    KnownFileSystem{"/vsisparse", VsiRole::kFilter},
    KnownFileSystem{"/vsicrypt", VsiRole::kFilter},
    KnownFileSystem{"/vsicached", VsiRole::kFilter},
    KnownFileSystem{"/vsimem", VsiRole::kMemory},
    KnownFileSystem{"/vsistdin", VsiRole::kStdin},
    KnownFileSystem{"/vsistdout", VsiRole::kWriteOnly},
    KnownFileSystem{"/vsistdout_redirect", VsiRole::kWriteOnly},
};

struct UrlScheme {
  std::string_view prefix;
  std::string_view family;
};
constexpr std::array kUrlSchemes{UrlScheme{"s3://", "/vsis3"}, UrlScheme{"gs://", "/vsigs"},
                                 UrlScheme{"http://", "/vsicurl"}, UrlScheme{"https://", "/vsicurl"}};

bool is_name_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return std::islower(byte) || std::isdigit(byte) || c == '_';
}

// "/vsiNAME" at the start of `text` (or "vsiNAME" inside a chain, which GDAL also takes)
// followed by '/', '?' or the end: the prefix's length with its leading slash, else 0.
std::size_t vsi_prefix_length(std::string_view text, bool slash_optional) {
  const std::size_t skip = text.starts_with("/vsi") ? 1 : 0;
  if (skip == 0 && (!slash_optional || !text.starts_with("vsi"))) return 0;
  std::size_t end = skip + 3;
  while (end < text.size() && is_name_character(text[end])) ++end;
  if (end < text.size() && text[end] != '/' && text[end] != '?') return 0;
  return end;
}

const KnownFileSystem* known_file_system(std::string_view prefix) {
  for (const auto& known : kKnownFileSystems) {
    if (known.prefix == prefix) return &known;
  }
  return nullptr;
}

bool ends_a_name(std::string_view text, std::size_t at) { return at == text.size() || text[at] == '/'; }

// Where the archive ends in "path/to/a.zip/member" (after ".zip"): the first of `names`
// (any case) that is followed by '/' or the end; npos when none.
std::size_t archive_end(std::string_view text, std::span<const std::string_view> names) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t best = npos;
  for (const auto name : names) {
    for (auto at = lower.find(name, 1); at != npos; at = lower.find(name, at + 1)) {
      if (ends_a_name(lower, at + name.size())) {
        best = std::min(best, at + name.size());
        break;
      }
    }
  }
  return best;
}

// The closing brace of the one at text[0], braces nesting; npos when unbalanced.
std::size_t closing_brace(std::string_view text) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return i;
  }
  return npos;
}

class ChainParser {
 public:
  ChainParser(std::string_view input, InputClass& into) : input_(input), into_(into) {}

  // The path input_[at, at + size): a chain of /vsi file systems or a local file.
  void path(std::size_t at, std::size_t size, bool in_chain) {
    const auto text = input_.substr(at, size);
    const auto length = vsi_prefix_length(text, in_chain);
    if (length == 0) {
      if (!text.empty()) {
        into_.local_at = at;
        into_.local_size = size;
      }
      return;
    }
    // "vsicurl/..." inside a chain is "/vsicurl/...".
    // Prepended in place: GCC 12's "/" + string at -O3 warns of a memcpy overlap that
    // cannot happen (-Wrestrict, a known false positive).
    std::string prefix(text.substr(0, length));
    if (!text.starts_with('/')) prefix.insert(0, 1, '/');
    const auto* known = known_file_system(prefix);
    // Inside a chain only a known name is another file system ("vsi_tiles/a.tif" is a path).
    if (known == nullptr && !text.starts_with('/')) {
      into_.local_at = at;
      into_.local_size = size;
      return;
    }
    VsiLayer layer;
    layer.prefix = prefix;
    layer.family = prefix.ends_with("_streaming") ? prefix.substr(0, prefix.size() - 10) : prefix;
    layer.role = known != nullptr ? known->role : VsiRole::kUnknown;
    layer.at = at;
    layer.size = size;
    into_.layers.push_back(layer);
    const std::size_t rest_at = at + length + (length < size ? 1 : 0);  // after the '/' or '?'
    const auto rest = input_.substr(rest_at, at + size - rest_at);
    switch (layer.role) {
      case VsiRole::kNetwork:
        into_.remote = true;
        return;
      case VsiRole::kArchive:
        archive(rest_at, rest, known->archive_names, into_.layers.size() - 1);
        return;
      case VsiRole::kFilter:
        filter(layer.family, rest_at, rest);
        return;
      default:
        return;  // memory, standard input, standard output, unknown: nothing inside
    }
  }

 private:
  // "{archive}/member", or "path/to/a.zip/member" (the path possibly a chain).
  void archive(std::size_t rest_at, std::string_view rest, std::span<const std::string_view> names, std::size_t layer) {
    if (rest.starts_with('{')) {
      if (const auto close = closing_brace(rest); close != npos) {
        into_.layers[layer].size = rest_at + close + 1 - into_.layers[layer].at;
        path(rest_at + 1, close - 1, true);
        return;
      }
    }
    const auto end = archive_end(rest, names);
    const auto archive_size = end == npos ? rest.size() : end;
    into_.layers[layer].size = rest_at + archive_size - into_.layers[layer].at;
    path(rest_at, archive_size, true);
  }

  // The file a filter reads: after the offset and size of /vsisubfile/OFFSET_SIZE,FILE,
  // after the options of /vsicrypt/OPTIONS,file=FILE and /vsicached?OPTIONS&file=FILE,
  // the rest for /vsigzip/ and /vsisparse/.
  void filter(std::string_view family, std::size_t rest_at, std::string_view rest) {
    std::size_t skip = 0;
    if (family == "/vsisubfile") {
      skip = rest.find(',');
      if (skip == npos) return;
      ++skip;
    } else if (family == "/vsicrypt" || family == "/vsicached") {
      skip = rest.find("file=");
      if (skip == npos) return;
      skip += 5;
    }
    path(rest_at + skip, rest.size() - skip, true);
  }

  std::string_view input_;
  InputClass& into_;
};

// "NAME:" with NAME in capitals, digits and '_' (at least two characters, so no drive
// letter): how GDAL's drivers spell their subdatasets and options.
bool is_driver_path(std::string_view input) {
  const auto colon = input.find(':');
  if (colon == npos || colon < 2) return false;
  const auto name = input.substr(0, colon);
  return std::isupper(static_cast<unsigned char>(name[0])) && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == '_';
         });
}

// "scheme://" as RFC 3986 spells a scheme.
bool has_url_scheme(std::string_view input) {
  const auto end = input.find("://");
  if (end == npos || end == 0 || !std::isalpha(static_cast<unsigned char>(input[0]))) return false;
  return std::all_of(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(end), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

}  // namespace

const VsiLayer* InputClass::first_layer(VsiRole role) const {
  const auto found =
      std::find_if(layers.begin(), layers.end(), [&](const VsiLayer& layer) { return layer.role == role; });
  return found == layers.end() ? nullptr : &*found;
}

const VsiLayer* InputClass::network_layer() const { return first_layer(VsiRole::kNetwork); }

InputClass classify_input(std::string_view input) {
  InputClass classified;
  if (input.starts_with('@')) {
    classified.kind = InputKind::kListFile;
    classified.local_at = 1;
    classified.local_size = input.size() - 1;
    return classified;
  }
  if (!vsi_family_of_url(input).empty()) {
    classified.kind = InputKind::kUrl;
    classified.remote = true;
    return classified;
  }
  if (has_url_scheme(input)) {
    classified.kind = InputKind::kOtherUrl;
    return classified;
  }
  if (vsi_prefix_length(input, false) > 0) {
    classified.kind = InputKind::kVsiPath;
    ChainParser(input, classified).path(0, input.size(), false);
    return classified;
  }
  if (is_driver_path(input)) {
    classified.kind = InputKind::kDriverPath;
    return classified;
  }
  if (!input.empty()) {
    classified.local_at = 0;
    classified.local_size = input.size();
  }
  return classified;
}

std::string_view local_file_of(std::string_view input, const InputClass& classified) {
  if (!classified.has_local_file()) return {};
  return input.substr(classified.local_at, classified.local_size);
}

std::string with_local_file(std::string_view input, const InputClass& classified, std::string_view file) {
  if (!classified.has_local_file()) return std::string(input);
  std::string replaced(input.substr(0, classified.local_at));
  replaced += file;
  replaced += input.substr(classified.local_at + classified.local_size);
  return replaced;
}

LocalPathKind local_path_kind(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return LocalPathKind::kFolder;
  if (path.find_first_of("*?[") != std::string::npos && !std::filesystem::exists(path, error)) {
    return LocalPathKind::kPattern;
  }
  return LocalPathKind::kFile;
}

std::string_view vsi_family_of_url(std::string_view input) {
  for (const auto& scheme : kUrlSchemes) {
    if (input.starts_with(scheme.prefix)) return scheme.family;
  }
  return {};
}

}  // namespace mgpr
