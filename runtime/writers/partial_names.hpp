#pragma once
// The temporary names every output is written under before it is renamed over its
// target complete: `.<name>.partial-<host>-<pid><extension>` beside the target (drivers
// choose by extension). Host and process in the name: two runs writing one output folder
// at once (a job submitted twice, on one node or two) never write, or remove, each
// other's file. A process killed while writing (SIGKILL, the node's OOM killer) leaves
// its files behind; the next run removes those of this host's dead processes.
#include <filesystem>
#include <vector>

namespace mgpr::runtime::output {

// The temporary name of `target` for this process.
std::filesystem::path partial_path(const std::filesystem::path& target);

// Removes from `folder` (not below it) the temporary files a process of this host left
// that no longer runs (a dataset folder with all it holds); files of other hosts, of live
// processes, and anything that is not a regular file or a folder (a link is never
// followed or removed) stay. Returns those removed.
std::vector<std::filesystem::path> remove_stale_partials(const std::filesystem::path& folder);

}  // namespace mgpr::runtime::output
