#pragma once
// The inputs as users hold them, turned into the list of rasters a run reads: files,
// folders of tiles, `@list` files, quoted globs and remote rasters (URLs and GDAL's /vsi
// paths), each told apart by mgpr/input_kind.hpp. `mgpr` and `mgpr-submit` expand them
// with the same rules, once per run (in a run of several ranks rank 0 expands and the
// others take its list: runtime/app/run_plan.hpp's expand_inputs_once); GDAL is not needed
// for this (the launcher runs on login nodes).
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr {

// How folders given as inputs are listed (the keys image_glob and recursive).
struct InputRules {
  std::string image_glob;  // fnmatch(3) pattern on file names; empty: kRasterExtensions
  bool recursive = false;  // also the subfolders (hidden ones excepted)
};

// The file name endings a folder's rasters have when image_glob is not given. Sidecars
// (.aux.xml, .ovr, .msk) and other files a tile folder holds are not among them.
inline constexpr std::string_view kRasterExtensions[] = {".tif", ".tiff", ".vrt", ".jp2", ".img"};

// True for a raster read over the network: http(s)://, s3://, gs://, and any /vsi path
// through GDAL's network file systems, inside another too (/vsizip//vsis3/b/x.zip/y.tif);
// mgpr/input_kind.hpp's classify_input(input).remote.
bool is_remote_input(std::string_view input);

// The path GDAL opens for `input`: s3://bucket/key → /vsis3/bucket/key, gs://… → /vsigs/…,
// http(s)://… → /vsicurl/http(s)://…; anything else unchanged.
std::string gdal_path_of(std::string_view input);

// A URL or path as it may be shown in logs and summaries: a query string (which can carry
// a signature or token) replaced by "?…", and user:password@ removed.
std::string redact_input(std::string_view input);

// Every raster the inputs name, in order, each once (the first time it appears):
// - `@FILE`: one input per line (blank lines and lines starting with '#' skipped); a
//   relative path is relative to the list file's folder; a line may be any form below.
// - a folder: its files matching rules.image_glob (default kRasterExtensions), sorted by
//   name, with the subfolders' when rules.recursive.
// - a pattern with *, ? or [ that names no existing file: the files it matches, sorted
//   (for patterns the shell did not expand because they were quoted).
// - a URL: gdal_path_of(input); a /vsi path (mgpr/input_kind.hpp) or a driver's own
//   syntax (NETCDF:"a.nc":var): itself, never listed, never normalised.
// - anything else: itself (whether it exists is for the reader to say, with the fix).
// In a list file a relative path, or the relative archive or file of a /vsi path
// (/vsizip/a.zip/x.tif), is taken from the list's folder.
// Throws UsageError naming the input when a list file cannot be read, a folder or
// pattern yields no raster, a list file names another list, an input is a URL of another
// scheme (az://, ftp://) or GDAL's write-only /vsistdout/, or nothing is left at all.
std::vector<std::string> expand_inputs(std::span<const std::string> inputs, const InputRules& rules);

}  // namespace mgpr
