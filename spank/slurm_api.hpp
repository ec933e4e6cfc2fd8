#pragma once
// spank.h declares the slurm_spank_* hooks outside its own extern "C" block, which
// would give them C++ linkage here; wrapping the include keeps them C symbols that
// Slurm's loader finds by name.
extern "C" {
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
}
