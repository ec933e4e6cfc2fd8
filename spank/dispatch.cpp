// Slurm's entry points, and nothing else: each switches on the context it runs in
// (srun, sbatch/salloc, slurmstepd) into that context's file, and catches everything,
// because no C++ exception may unwind into slurmstepd, srun or sbatch.
#include <string>
#include <vector>

#include "log.hpp"
#include "options.hpp"
#include "plugstack_config.hpp"
#include "slurm_api.hpp"
#include "srun_context.hpp"
#include "stepd_context.hpp"

extern "C" {
extern const char plugin_name[] = "mgpr";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

using namespace mgpr::spank;

// Runs one callback's body through the plugin's one exception guard (log.hpp).
template <class Body>
int guarded_entry(const char* callback, Body&& body) noexcept {
  return guarded(callback, ErrorPrefix::kWhere, std::forward<Body>(body));
}

// Contexts where users give options: srun (local), sbatch/salloc (allocator), and
// slurmstepd (remote), which receives them from srun.
bool has_options(spank_context_t context) {
  return context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE;
}

}  // namespace

int slurm_spank_init(spank_t spank, int argc, char** argv) {
  return guarded_entry("init", [&] {
    // A bad plugstack.conf argument is reported by name wherever the plugin loads.
    const std::vector<std::string> args(argv, argv + argc);
    plugstack_config() = parse_plugstack_config(args);
    return has_options(spank_context()) ? register_options(spank) : 0;
  });
}

int slurm_spank_local_user_init(spank_t spank, int /*argc*/, char** /*argv*/) {
  return guarded_entry("local_user_init", [&] { return srun_local_user_init(spank); });
}

int slurm_spank_user_init(spank_t spank, int /*argc*/, char** /*argv*/) {
  return guarded_entry("user_init", [&] { return stepd_user_init(spank); });
}

int slurm_spank_task_init(spank_t spank, int /*argc*/, char** /*argv*/) {
  return guarded_entry("task_init", [&] { return stepd_task_init(spank); });
}

int slurm_spank_task_exit(spank_t spank, int /*argc*/, char** /*argv*/) {
  return guarded_entry("task_exit", [&] { return stepd_task_exit(spank); });
}

int slurm_spank_exit(spank_t spank, int /*argc*/, char** /*argv*/) {
  return guarded_entry("exit", [&] { return spank_context() == S_CTX_REMOTE ? stepd_exit(spank) : 0; });
}
