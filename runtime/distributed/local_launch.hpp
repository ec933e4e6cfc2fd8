#pragma once
// `mgpr gpus=N` outside Slurm and outside any launcher: start N ranks of this same
// program on this machine (one per GPU, or N CPU ranks), the way the original project
// "just worked" on a multi-GPU workstation.
#include <string>
#include <vector>

namespace mgpr::runtime {

// Re-executes /proc/self/exe `ranks` times with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, NODE_RANK=0, GROUP_RANK=0, MASTER_ADDR=127.0.0.1 and a free
// MASTER_PORT (and, when `one_gpu_each`, CUDA_VISIBLE_DEVICES = the i-th entry of this
// process's own list, or i when it has none), passing `arguments` as argv[1...] (the
// program name is not part of them). When a rank exits non-zero or dies by a signal,
// the others get SIGTERM, then SIGKILL after a grace period. SIGINT and SIGTERM sent to
// this process are passed on. Returns the first failure's status (128 + signal for a
// signal), else 0. Call it before starting threads: it takes those signals by blocking
// them in the calling thread. Throws UsageError when `one_gpu_each` asks for more GPUs
// than CUDA_VISIBLE_DEVICES lists.
int run_local_ranks(int ranks, bool one_gpu_each, const std::vector<std::string>& arguments);

}  // namespace mgpr::runtime
