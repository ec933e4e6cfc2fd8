#pragma once
// What mgpr-submit checks before it calls sbatch, so a mistake costs seconds on the
// login node rather than a queue wait and a failed job.
#include <span>
#include <string>
#include <vector>

#include "mgpr/config.hpp"

namespace mgpr::launcher {

struct InputCheck {
  int local = 0;                    // local rasters found readable
  std::vector<std::string> remote;  // remote rasters (GDAL paths), not opened from here
};

// The inputs expanded as the runtime expands them (mgpr/input_list.hpp: folders, @lists,
// globs, URLs): each local raster exists and is readable; the model file exists (unless
// built in), and the output folder can be written. Remote rasters are returned, not
// opened: a login node may not reach the storage the compute nodes read. Throws
// UsageError naming the input and the fix.
InputCheck check_inputs(const RunConfig& config);

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
