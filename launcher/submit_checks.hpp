#pragma once
// What mgpr-submit checks before it calls sbatch, so a mistake costs seconds on the
// login node rather than a queue wait and a failed job.
#include "mgpr/config.hpp"

namespace mgpr::launcher {

// Each raster exists and is readable, the model file exists (unless built in), and the
// output folder can be written. Throws UsageError naming the input and the fix.
void check_inputs(const RunConfig& config);

}  // namespace mgpr::launcher
