// Slurm's entry points. Each one catches everything: no C++ exception may unwind into
// slurmstepd, srun or sbatch.
#include <string>
#include <vector>

#include "log.hpp"
#include "options.hpp"
#include "plugin_args.hpp"
#include "slurm_api.hpp"

extern "C" {
extern const char plugin_name[] = "mgpr";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

int slurm_spank_init(spank_t spank, int argc, char** argv) {
  using namespace mgpr::spank;
  try {
    const std::vector<std::string> args(argv, argv + argc);
    plugin_args() = parse_plugin_args(args);
  } catch (const std::exception& error) {
    log_error("{}", error.what());
    return -1;
  }
  return register_options(spank);
}
