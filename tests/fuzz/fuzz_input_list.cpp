// An `@list` input file, one raster a line, as users and their scripts write it (comments,
// blank lines, CRLF, padding, URLs with tokens, /vsi chains), expanded as mgpr and
// mgpr-submit expand it, and each line classified (mgpr/input_kind.hpp). The list is read
// from a path, so the bytes go to a file in a folder of its own, and its relative lines
// name things in that folder.
#include <unordered_set>

#include "fuzz_input.hpp"
#include "mgpr/error.hpp"
#include "mgpr/input_kind.hpp"
#include "mgpr/input_list.hpp"

namespace {

// A local line is a pattern when it has *, ? or [, and a pattern is matched against the
// file system (glob(3)): one that leaves the list's folder (/*/*/*, ../*) walks the
// machine, which is slow and says nothing of the list's parsing. Patterns stay inside.
bool walks_the_machine(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return false;
  line.remove_prefix(first);
  return line.find_first_of("*?[") != std::string_view::npos && line.find('/') != std::string_view::npos &&
         !mgpr::is_remote_input(line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = mgpr::fuzz::as_text(data, size);
  const auto lines = mgpr::fuzz::lines_of(text);
  for (const auto& line : lines) {
    if (walks_the_machine(line)) return 0;
  }
  for (const auto& line : lines) {
    // What logs show of a line, and where GDAL reads it from.
    static_cast<void>(mgpr::redact_input(line));
    static_cast<void>(mgpr::gdal_path_of(line));
    // Every span the classification gives lies inside the line, and putting the local
    // file back where it was gives the line unchanged.
    const auto classified = mgpr::classify_input(line);
    for (const auto& layer : classified.layers) {
      if (layer.at > line.size() || layer.size > line.size() - layer.at) __builtin_trap();
    }
    if (classified.has_local_file() &&
        (classified.local_at > line.size() || classified.local_size > line.size() - classified.local_at)) {
      __builtin_trap();
    }
    if (mgpr::with_local_file(line, classified, mgpr::local_file_of(line, classified)) != line) __builtin_trap();
  }
  static mgpr::fuzz::InputFile file("rasters.txt");
  const auto list = "@" + file.write(data, size).string();
  mgpr::fuzz::refusing_only_with<mgpr::UsageError>([&] {
    const std::string inputs[] = {list};
    const auto rasters = mgpr::expand_inputs(inputs, mgpr::InputRules{});
    // Each raster once, none empty, none a list (lists do not nest).
    std::unordered_set<std::string> seen;
    for (const auto& raster : rasters) {
      if (raster.empty() || raster.starts_with('@') || !seen.insert(raster).second) __builtin_trap();
    }
  });
  return 0;
}
