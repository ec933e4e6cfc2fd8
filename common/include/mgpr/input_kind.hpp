#pragma once
// What an input is, told from its spelling: a path on this machine, an `@list` file, a URL,
// a path through GDAL's virtual file systems (/vsizip/, /vsis3/, ... and their chains) or
// a GDAL driver's own syntax. The one rule mgpr-submit, the run plan and the runtime's
// remote reads all ask, so what the launcher accepts is what mgpr reads. GDAL-free: the
// launcher runs on login nodes.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mgpr {

enum class InputKind {
  kLocalPath,   // a file, folder or pattern on this machine (local_path_kind says which)
  kListFile,    // @FILE: one input a line
  kUrl,         // s3://, gs://, http://, https://: read as /vsis3/, /vsigs/, /vsicurl/ (gdal_path_of)
  kOtherUrl,    // scheme://... with any other scheme: not read (GDAL's /vsi path is the way)
  kVsiPath,     // through GDAL's virtual file systems, chains included
  kDriverPath,  // DRIVER:...: a driver's own syntax, e.g. NETCDF:"a.nc":var, GTIFF_DIR:2:a.tif
};

// What a GDAL virtual file system does with the rest of the path.
enum class VsiRole {
  kNetwork,    // reads over the network: /vsicurl/, /vsis3/, /vsigs/, /vsiaz/, /vsiadls/, /vsioss/,
               // /vsiswift/ (and their _streaming forms), /vsiwebhdfs/, /vsihdfs/
  kArchive,    // a member of an archive: /vsizip/, /vsitar/, /vsi7z/, /vsirar/
  kFilter,     // a whole file decompressed, cut, decrypted or cached: /vsigzip/, /vsisubfile/,
               // /vsisparse/, /vsicrypt/, /vsicached?
  kMemory,     // /vsimem/: this process's memory, empty when a program starts
  kStdin,      // /vsistdin/: the standard input
  kWriteOnly,  // /vsistdout/, /vsistdout_redirect/: GDAL writes there, never reads
  kUnknown,    // a /vsi name GDAL's documentation does not list (a newer GDAL, a plugin)
};

// One file system of a /vsi chain.
struct VsiLayer {
  std::string prefix;  // as written, without the separator after it: "/vsis3_streaming"
  std::string family;  // the random-access form: "/vsis3" for "/vsis3_streaming"
  VsiRole role = VsiRole::kUnknown;
  // The part of the input this layer reads, from its prefix on: "/vsis3/b/x.zip" in
  // "/vsizip//vsis3/b/x.zip/y.tif"; an archive's member is not part of it.
  std::size_t at = 0;
  std::size_t size = 0;
};

struct InputClass {
  InputKind kind = InputKind::kLocalPath;
  std::vector<VsiLayer> layers;  // kVsiPath: outermost first
  // Read over the network (a URL, or a chain through a kNetwork layer): credentials and
  // the remote read settings apply, and a login node may not reach it.
  bool remote = false;
  // The file on this machine the input reads, as a span of the input: a kLocalPath's
  // path; in a chain, the innermost local file (an archive's, a compressed or cut file's).
  // local_at is npos when there is none (remote, memory, standard input, a driver path).
  std::size_t local_at = std::string_view::npos;
  std::size_t local_size = 0;

  [[nodiscard]] bool has_local_file() const { return local_at != std::string_view::npos; }
  // The first layer that reads over the network; null when none.
  [[nodiscard]] const VsiLayer* network_layer() const;
  // The first layer of role `role`; null when none.
  [[nodiscard]] const VsiLayer* first_layer(VsiRole role) const;
};

// The class of `input`, from its spelling alone (no file system access).
InputClass classify_input(std::string_view input);

// The local file `classified` (classify_input(input)) reads, e.g. "a.zip" for
// "/vsizip/a.zip/x.tif"; empty when none.
std::string_view local_file_of(std::string_view input, const InputClass& classified);

// `input` with its local file replaced by `file` ("/vsizip/a.zip/x.tif" with "/data/a.zip"
// gives "/vsizip//data/a.zip/x.tif"); `input` itself when it has none.
std::string with_local_file(std::string_view input, const InputClass& classified, std::string_view file);

// A kLocalPath as the file system shows it now.
enum class LocalPathKind {
  kFile,     // a file, or nothing yet (whether it exists is for the reader to say)
  kFolder,   // a folder: its rasters
  kPattern,  // has *, ? or [ and names no existing file: the files it matches
};
LocalPathKind local_path_kind(const std::string& path);

// GDAL's name for a URL's file system ("/vsis3" for "s3://..."), for messages; empty
// when it has none.
std::string_view vsi_family_of_url(std::string_view input);

}  // namespace mgpr
