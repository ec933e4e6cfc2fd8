#pragma once
// What mgpr-submit checks before it calls sbatch, so a mistake costs seconds on the
// login node rather than a queue wait and a failed job.
#include <span>
#include <string>
#include <vector>

#include "mgpr/config.hpp"

namespace mgpr::launcher {

struct InputCheck {
  int local = 0;                       // local rasters (or the archives they are in) found readable
  std::vector<std::string> remote;     // remote rasters (GDAL paths), not opened from here
  std::vector<std::string> unchecked;  // a driver's syntax, an unknown /vsi file system: left to the job
};

// The inputs expanded as the runtime expands them (mgpr/input_list.hpp: folders, @lists,
// globs, URLs, /vsi paths), each classified by mgpr/input_kind.hpp: each local raster
// exists and is readable, and so does the local archive or file of a /vsi path
// (/vsizip/a.zip/x.tif: a.zip; the member is the job's to find); the model file exists
// (unless built in), and the output folder can be written. Remote rasters are returned,
// not opened: a login node may not reach the storage the compute nodes read. Refused: GDAL's
// /vsimem/ (empty in a new process) and /vsistdin/ (a batch job has no input). Throws
// UsageError naming the input and the fix.
InputCheck check_inputs(const RunConfig& config);

// What mgpr-submit says about the rasters it could not check.
std::vector<std::string> unchecked_input_notes(std::span<const std::string> unchecked);

// Which credential sources a remote read could use are present (not their contents).
struct CredentialHints {
  bool aws = false;
  bool google = false;
};
CredentialHints credential_hints_from_environment();

// What mgpr-submit says about remote rasters it could not check: that they were not
// opened, and a missing credential source per storage kind.
std::vector<std::string> remote_input_notes(std::span<const std::string> remote, const CredentialHints& hints);

}  // namespace mgpr::launcher
